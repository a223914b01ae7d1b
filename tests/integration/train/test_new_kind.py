"""A new env kind is one folder and one line: the `echo` kind (tests/fixtures/kinds/echo/, nothing of it in
services/) is registered by `LORALOOP_KINDS` alone and runs through a rollout, export, the Task Server, online
GRPO's reward and `train rl` on vLLM CPU, as the bundled kinds do."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT, run_cli

LINE = "echo=tests.fixtures.kinds.echo.kind"  # the one line of configuration
TASKS = "tests/fixtures/kinds/echo/tasks"
MODEL = ROOT / "volumes/models/SmolLM2-135M-Instruct"


@pytest.fixture
def echo_kind(monkeypatch):
    """The echo kind registered in this process too (for the Task Server's app), and forgotten afterwards."""
    from loraloop.kinds import prompts, registry

    def forget() -> None:
        for cached in (registry.kind_modules, registry.env_kind, prompts.builder):
            cached.cache_clear()

    monkeypatch.setenv(registry.CONFIG_VARIABLE, LINE)
    forget()
    yield registry.env_kind("echo")
    monkeypatch.delenv(registry.CONFIG_VARIABLE)
    forget()


def test_the_kind_is_nowhere_in_loraloop_and_unknown_without_its_line():
    """No module of loraloop names the kind; without the line it is an unknown kind, named with the known ones."""
    from loraloop.errors import TaskFormatError
    from loraloop.kinds.registry import KIND_MODULES, env_kind

    assert "echo" not in KIND_MODULES
    assert not [p for p in (ROOT / "services/loraloop").rglob("*.py") if "kinds.echo" in p.read_text()]
    with pytest.raises(TaskFormatError, match=r"unknown environment kind 'echo' \(known: shell, web"):
        env_kind("echo")


def test_rollout_export_and_the_task_server_run_a_kind_registered_by_one_line(tmp_path, echo_kind):
    from fastapi.testclient import TestClient

    from loraloop.settings import Settings
    from loraloop.store import open_store
    from loraloop.store.trajectories import iter_episodes
    from loraloop.task_registry import load_registry
    from loraloop.taskserver.app import create_app, open_states

    env = {"LORALOOP_KINDS": LINE, "LORALOOP_STORE_URL": f"file://{tmp_path / 'store'}"}
    rolled = run_cli(
        ["rollout", "--experiment", "teacher", "--task_registry", TASKS, "--rollouts_per_task", "2", "--run_id", "e"],
        env,
        cwd=ROOT,
    )
    assert rolled.returncode == 0, rolled.stdout + rolled.stderr
    episodes = list(iter_episodes(open_store(env["LORALOOP_STORE_URL"]), "trajectories/teacher/e/"))
    assert len(episodes) == 6 and all(e.start.env == "echo" and e.end.success for e in episodes)
    exported = run_cli(
        ["export", "--input", "trajectories/teacher/e", "--output_dir", str(tmp_path / "ds"), "--format", "bc"],
        env,
        cwd=ROOT,
    )
    assert exported.returncode == 0, exported.stdout + exported.stderr
    rows = [json.loads(line) for line in (tmp_path / "ds" / "bc.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and {r["completion"][0]["content"] for r in rows} == {
        "say(ocean)",
        "say(maple)",
        "say(river)",
    }
    assert rows[0]["prompt"][0]["content"].startswith("You repeat words.")  # the kind's prompt, as the agent saw it

    settings = Settings(store_url=f"file://{tmp_path / 'served'}")
    app = create_app(load_registry(TASKS), "echo-ts", settings, run_id="r1", states=open_states(settings, "echo-ts"))
    with TestClient(app) as client:
        assert "echo" in client.get("/api/task/info").json()["env_kinds"]
        start = client.post("/api/episode/start", json={"sample_id": "test-test-00000"}).json()
        reply = client.post(
            "/api/episode/step", json={"episode_id": start["episode_id"], "action": {"content": "say(rivet)"}}
        ).json()
        assert reply["done"] and reply["reward"] == 0.8  # difflib: river / rivet
    [served] = iter_episodes(open_store(settings=settings), "trajectories/echo-ts/r1/")
    assert served.start.env == "echo" and served.end.reward == 0.8

    # online GRPO's reward: each completion played in the kind's own env (no action: -1), each stored
    from loraloop.train.online_grpo import EnvironmentReward, opening_prompts

    registry = load_registry(TASKS)
    [row] = opening_prompts(registry, "test", settings)
    assert row["task_id"] == "test-test-00000" and row["prompt"][-1]["content"].startswith("Task: Say the word 'river'")
    reward = EnvironmentReward(registry, settings, concurrency=2)
    got = reward(
        [[{"role": "assistant", "content": c}] for c in ("say(river)", "say(rivet)", "")],
        task_id=["test-test-00000"] * 3,
    )
    assert got == [1.0, 0.8, -1.0]
    assert len(list(iter_episodes(open_store(settings=settings), f"trajectories/grpo_online/{reward.run_id}/"))) == 3


def echo_rl(tmp_path, vllm_url: str, name: str) -> tuple[dict, list[str]]:
    """The environment and command line of `loraloop train rl` on the echo kind in asynchronous mode (`--async`:
    K = 1) from the base model: two iterations of 2 tasks x 4 rollouts of one step, no held-out evaluation."""
    experiments = tmp_path / "experiments.yaml"
    experiments.write_text(
        "experiments:\n  rl_echo:\n    policy: openai\n    model: SmolLM2-135M-Instruct\n    max_steps: 1\n"
        "    temperature: 1.0\n"
    )
    env = {
        **os.environ,
        "LORALOOP_KINDS": LINE,
        "LORALOOP_VLLM_URL": vllm_url,
        "LORALOOP_STORE_URL": f"file://{tmp_path / 'store'}",
        "LORALOOP_EXPERIMENTS_PATH": str(experiments),
        "LORALOOP_MAX_TOKENS": "16",
        "LORALOOP_ADAPTERS_DIR": str(tmp_path / "adapters"),
    }
    command = [sys.executable, "-m", "loraloop.cli", "train", "rl", "--dataset_path", TASKS]
    command += ["--output_dir", str(tmp_path / "rl"), "--adapter_name", name, "--experiment", "rl_echo"]
    command += ["--iterations", "2", "--tasks_per_iteration", "2", "--rollouts_per_task", "4", "--eval_every", "0"]
    command += ["--async"]
    command += ["--lora_r", "8", "--batch_size", "8", "--base_model", str(MODEL)]
    return env, command


def test_train_rl_runs_a_kind_registered_by_one_line_asynchronously(vllm_url, tmp_path):
    """Two iterations of online RL from the base model in asynchronous mode (`--async`: K = 1): every episode
    sampled by vLLM, scored by the kind, trained on and published as versions 1 and 2. The second iteration's
    rollouts were submitted with the first's, before those were collected: they started before it trained, and
    they play while it trains (their records' timestamps cross its training window), sampled by the base model, one
    version behind the v1 they train, so none is dropped."""
    from loraloop.store import adapters, open_store
    from loraloop.store.trajectories import iter_episodes, run_prefix

    name = f"echo{os.getpid()}"
    env, command = echo_rl(tmp_path, vllm_url, name)
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    history = json.loads((tmp_path / "rl" / "rl_history.json").read_text())
    store = open_store(env["LORALOOP_STORE_URL"])
    history = history[1:]  # after the start's row (iteration 0: nothing trained yet)
    assert [(r["rows"] > 0, r["version"]) for r in history] == [(True, f"{name}-v1"), (True, f"{name}-v2")], history
    assert adapters.versions(store, name) == [1, 2]
    second = list(iter_episodes(store, run_prefix("rl_echo", f"{name}-it0001")))
    began, ended = history[0]["train_window"]
    assert min(e.start.timestamp for e in second) < began  # out before the first iteration's were collected
    assert len(second) == 8 and any(e.start.timestamp < ended and e.end.timestamp > began for e in second), (
        [(e.start.timestamp, e.end.timestamp) for e in second],
        (began, ended),
    )
    assert {e.start.adapter for e in second} == {None} and history[1]["sampled_with"] == history[0]["sampled_with"]
    assert (history[1]["stale"], history[1]["versions"]) == (0, {"v0": 8})  # one version behind v1: within K = 1


def test_train_rl_in_asynchronous_mode_survives_kill_9(vllm_url, tmp_path):
    """The asynchronous run killed with SIGKILL once the second iteration's rollout job, submitted ahead while the
    first trains, has stored an episode; the same command again goes on from what is stored: it exits 0, publishes
    versions 1 and 2 once each, keeps every episode the killed run stored as it was, and plays none twice."""
    import signal
    import time

    from loraloop.store import adapters, open_store
    from loraloop.store.trajectories import iter_episodes, run_prefix

    name = f"echokill{os.getpid()}"
    env, command = echo_rl(tmp_path, vllm_url, name)
    store = open_store(env["LORALOOP_STORE_URL"])
    runs = [run_prefix("rl_echo", f"{name}-it{iteration:04d}") for iteration in (0, 1)]
    first = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 600
    while not list(store.list(runs[1])):  # iteration 1's job is out (it is submitted ahead in async mode)
        assert first.poll() is None, f"the run ended before it could be killed:\n{first.stdout.read()}"
        assert time.monotonic() < deadline, "iteration 1's rollout never started"
        time.sleep(0.1)
    first.send_signal(signal.SIGKILL)
    first.wait()
    published = adapters.versions(store, name)
    kept = {key: store.get_bytes(key) for run in runs for key in store.list(run)}

    second = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert published in ([], [1]) and adapters.versions(store, name) == [1, 2], published
    assert all(store.get_bytes(key) == data for key, data in kept.items())
    for run in runs:  # 2 tasks x 4 rollouts, each stored once
        played = [(e.start.task_id, e.start.attempt_idx) for e in iter_episodes(store, run)]
        assert len(played) == 8 and len(set(played)) == 8, played
    history = json.loads((tmp_path / "rl" / "rl_history.json").read_text())
    assert [r["iteration"] for r in history] == [0, 1, 2]


def test_rl_held_out_counts_episodes_lost_to_the_model_server_apart(echo_kind, vllm_url, settings_for, tmp_path):
    """Issue #30 item 5: the held-out evaluation of a version whose model server answers every chat completion with
    HTTP 500 (the real vLLM behind FaultProxy, test_model_faults' fault injector: vLLM does not fail on demand). The
    episode is played again once (LORALOOP_EPISODE_RETRIES=1), then stored as service_error: the row counts it in
    `eval_errors` and its replay in `eval_retries`, and `held_out` is None (no episode the policy played), not the
    0 % it was when such errors counted as the policy's failures."""
    from loraloop.rl_loop import RLRun
    from loraloop.train.config import RLConfig
    from tests.helpers import FaultProxy

    experiments = tmp_path / "experiments.yaml"
    experiments.write_text("experiments:\n  rl_echo:\n    policy: openai\n    model: SmolLM2-135M-Instruct\n")
    proxy = FaultProxy(vllm_url)
    proxy.fail = 100
    try:
        settings = settings_for(
            vllm_url=proxy.url,
            experiments_path=experiments,
            model_retries=0,  # each 500 reaches the episode
            episode_retries=1,
            episode_retry_delay_s=0,
        )
        cfg = RLConfig(
            base_model=str(MODEL),
            dataset_path=TASKS,
            output_dir=str(tmp_path / "rl"),
            adapter_name="echoeval",
            experiment="rl_echo",
            eval_subset="test",
            eval_every=1,
        )
        counted = RLRun(cfg, settings).held_out(0)
    finally:
        proxy.close()
    assert counted == {"held_out": None, "eval_errors": 1, "eval_retries": 1}, counted  # the one test task, twice
    assert proxy.failed == 2
