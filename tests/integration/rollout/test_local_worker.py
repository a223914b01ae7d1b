"""The local transformers worker (`backend: local`): SmolLM2 in this process plays a shell episode in Docker
and records the same fields a served model does: token ids of the prompt and completion, and logprobs."""

import pytest

from loraloop.rollout.experiments import get_experiment
from loraloop.rollout.sampler import plan_rollout
from loraloop.service.client import execute
from loraloop.store import open_store
from loraloop.store.trajectories import iter_episodes
from loraloop.task_registry import load_registry
from tests.conftest import model_files


@pytest.mark.usefixtures("docker_ready")
def test_local_worker_records_what_a_served_model_does(settings_for):
    from transformers import AutoTokenizer

    settings = settings_for(model_dir=model_files(), max_tokens=32)
    experiment = get_experiment("configs/experiments.yaml", "smollm_local").model_copy(update={"max_steps": 1})
    specs = plan_rollout(
        load_registry("configs/tasks/os"),
        "configs/tasks/os",
        experiment,
        run_id="local",
        subset="test+count-ext",
        sample_size=1,
        rollouts_per_task=1,
        seed=1,
        task_seed=7,
        temperature=None,
    )
    [summary] = execute(specs, settings, quiet=True)
    assert summary.status in ("completed", "round_limit"), summary
    [episode] = list(iter_episodes(open_store(settings=settings), "trajectories/smollm_local/local/"))
    assert episode.start.policy == "local" and episode.start.model_url is None
    tokenizer = AutoTokenizer.from_pretrained(model_files())
    for step in episode.steps:
        assert step.action_source == "worker" and step.model == "SmolLM2-135M-Instruct"
        assert step.completion_tokens == len(step.completion_token_ids) == len(step.logprobs) > 0
        assert all(p <= 0 for p in step.logprobs) and step.sampling["max_tokens"] == 32
        assert tokenizer.decode(step.completion_token_ids, skip_special_tokens=True).startswith(step.raw_output)
        prompt = tokenizer.decode(step.prompt_token_ids)
        assert "<|im_start|>system" in prompt and episode.start.goal in prompt and prompt.endswith("assistant\n")
