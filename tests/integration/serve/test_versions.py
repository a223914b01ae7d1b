"""Versioned adapters on a real vLLM CPU server: every published version is served as `<name>-vK`, a
rollout naming the bare adapter samples the version published last and records it, and retired
versions are gone with a clear error for whoever still names them."""

from pathlib import Path

import pytest

from loraloop.agents.policy import OpenAIPolicy
from loraloop.errors import ServiceUnavailable
from loraloop.rollout.experiments import get_experiment
from loraloop.rollout.preflight import check_servers, served_models
from loraloop.rollout.sampler import plan_rollout
from loraloop.serve.publish import publish, retire, serve_version, unload_adapter
from loraloop.service.client import execute
from loraloop.store import open_store
from loraloop.store.records import Adapter
from loraloop.store.trajectories import parse_episode
from loraloop.task_registry import load_registry
from tests.helpers import smollm_adapter

MODEL = Path("volumes/models/SmolLM2-135M-Instruct")
REGISTRY = "configs/tasks/os"
CHAT = [{"role": "user", "content": "Write one shell command that prints the current directory."}]


def listed(url: str) -> set[str]:
    return {m["id"] for m in served_models(url)}


def plan(settings, model: str):
    experiment = get_experiment("configs/experiments.yaml", "smollm_zero").model_copy(update={"max_steps": 2})
    return plan_rollout(
        load_registry(REGISTRY),
        REGISTRY,
        experiment,
        run_id="versions",
        subset="test+family:count-ext",
        sample_size=1,
        rollouts_per_task=2,
        seed=1,
        task_seed=0,
        temperature=0.0,
        model=model,
    )


@pytest.mark.usefixtures("docker_ready")
def test_versions_are_served_pinned_recorded_and_retired(vllm_url, settings_for, tmp_path):
    settings = settings_for(vllm_url=vllm_url)
    first = publish(settings, smollm_adapter(tmp_path / "a", random_b=True, seed=1), "ver")
    second = publish(settings, smollm_adapter(tmp_path / "b", random_b=True, seed=2), "ver")
    assert (first["served_name"], second["served_name"]) == ("ver-v1", "ver-v2")
    assert {"ver-v1", "ver-v2"} <= listed(vllm_url) and "ver" not in listed(vllm_url)
    answers = {name: OpenAIPolicy(model=name, base_url=vllm_url, seed=0).act(CHAT) for name in ("ver-v1", "ver-v2")}
    assert answers["ver-v1"].model == "ver-v1" and answers["ver-v2"].model == "ver-v2"
    assert answers["ver-v1"].text != answers["ver-v2"].text  # two sets of weights, each under its own name

    # a rollout naming the bare adapter samples v2 in every episode, and each records it
    summaries = execute(plan(settings, "ver"), settings, quiet=True)
    assert len(summaries) == 2 and all(s.error is None for s in summaries), summaries
    store = open_store(settings=settings)
    v2 = Adapter(name="ver", version="v2", digest=second["weights_sha256"])
    for summary in summaries:
        episode = parse_episode(summary.key, store.get_bytes(summary.key))
        assert episode.start.adapter == v2 and episode.start.worker_model == "ver-v2"
        assert episode.steps and all(s.adapter == v2 and s.model == "ver-v2" for s in episode.steps)

    # retire keeps the newest; a retired version is a clear error, before any episode and for a request
    assert retire(settings, "ver", keep=1) == ["ver-v1"]
    assert "ver-v1" not in listed(vllm_url) and "ver-v2" in listed(vllm_url)
    assert unload_adapter(settings, "ver-v1") is False  # already gone: not an error
    with pytest.raises(ServiceUnavailable, match=rf"'ver-v1' is not served at {vllm_url}.*publish it again"):
        check_servers(plan(settings, "ver-v1"), settings)
    with pytest.raises(ServiceUnavailable, match=rf"'ver-v1' is not served at {vllm_url}"):
        OpenAIPolicy(model="ver-v1", base_url=vllm_url, retries=0).act(CHAT)
    with pytest.raises(ServiceUnavailable, match=rf"'nosuch' is not served at {vllm_url}"):
        check_servers(plan(settings, "nosuch"), settings)

    # a rollback makes v1 the version bare names resolve to, and retire keeps it
    serve_version(settings, "ver", "v1")
    assert [s.model for s in check_servers(plan(settings, "ver"), settings)] == ["ver-v1", "ver-v1"]
    assert retire(settings, "ver", keep=1) == [] and {"ver-v1", "ver-v2"} <= listed(vllm_url)
