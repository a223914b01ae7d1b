"""`loraloop train rl` on real parts: vLLM CPU serving SmolLM2 and its published versions, shell episodes in
Docker, a file store, rollouts through the embedded jobs path. The run is killed with SIGKILL in its second
iteration's rollout and started again: it must go on from the last published version, lose no stored episode
and publish no version twice. The tasks' check passes on even episode seeds (tests/fixtures/rl_coin), so groups differ
once the policy answers: a BC warm start (trained here on the two tasks' opening prompts) makes SmolLM2 answer, and is
published as version 1. Learning itself is measured by bench/rl.py."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import httpx
import pytest

from loraloop.envs.shell.env import PROTOCOLS
from loraloop.envs.shell.protocol import task_prompt
from loraloop.evaluate.iterations import measure, select_runs
from loraloop.kinds.prompts import build_messages
from loraloop.store import adapters, open_store
from loraloop.store.trajectories import iter_episodes, run_prefix
from loraloop.task_registry import load_registry
from loraloop.train.bc import train_bc
from loraloop.train.config import BCConfig
from loraloop.train.rl_batch import build_batch, turns

ROOT = Path(__file__).resolve().parents[3]
MODEL = ROOT / "volumes/models/SmolLM2-135M-Instruct"


def warm_start(folder: Path) -> Path:
    """A BC adapter that answers the coin tasks at once, trained on their opening prompts as the policy sees them."""
    instructions, examples = PROTOCOLS["text"]
    rows = [
        {
            "prompt": build_messages(instructions, examples, task_prompt(task.description), []),
            "completion": [{"role": "assistant", "content": "Think: I know it.\n\nAct: answer(root)"}],
        }
        for task in load_registry("tests/fixtures/rl_coin").select("train")
    ]
    data = folder / "bc.jsonl"
    data.parent.mkdir(parents=True)
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    train_bc(
        BCConfig(
            base_model=str(MODEL),
            dataset_path=str(data),
            output_dir=str(folder),
            epochs=4,
            batch_size=2,
            lr=3e-3,
            lora_r=8,
        )
    )
    return folder


def rl_command(out: Path, name: str, init: Path) -> list[str]:
    """Two iterations of 2 tasks x 4 rollouts from the warm start, short episodes, one held-out task."""
    return [
        sys.executable,
        "-m",
        "loraloop.cli",
        "train",
        "rl",
        "--dataset_path",
        "tests/fixtures/rl_coin",
        "--output_dir",
        str(out),
        "--adapter_name",
        name,
        "--experiment",
        "rl_test",
        "--iterations",
        "2",
        "--tasks_per_iteration",
        "2",
        "--rollouts_per_task",
        "4",
        "--eval_tasks",
        "1",
        "--eval_every",
        "2",
        "--lora_r",
        "8",
        "--batch_size",
        "8",
        "--base_model",
        str(MODEL),
        "--init_adapter",
        str(init),
        "--sampler",  # the difficulty pools' wiring (the rates rebuilt from the store on going on, `id:` subsets)
        "difficulty-pool",
    ]


def iteration_run(name: str, iteration: int) -> str:
    """Where an iteration's rollout episodes are stored."""
    return run_prefix("rl_test", f"{name}-it{iteration:04d}")


@pytest.mark.timeout(1800)  # about 5 CPU-minutes; 16 wall minutes were seen on the shared, loaded 2-core VM
def test_rl_runs_trains_publishes_versions_and_survives_kill_9(vllm_url, tmp_path, docker_ready):
    experiments = tmp_path / "experiments.yaml"
    experiments.write_text(
        "experiments:\n  rl_test:\n    policy: openai\n    model: SmolLM2-135M-Instruct\n"
        "    max_steps: 2\n    temperature: 1.0\n"
    )
    store_url = f"file://{tmp_path / 'store'}"
    env = {
        **os.environ,
        "LORALOOP_VLLM_URL": vllm_url,
        "LORALOOP_STORE_URL": store_url,
        "LORALOOP_EXPERIMENTS_PATH": str(experiments),
        "LORALOOP_MAX_TOKENS": "40",
        "LORALOOP_ADAPTERS_DIR": str(tmp_path / "adapters"),
        "PYTHONPATH": str(ROOT / "services"),
    }
    name, out = f"rl{uuid.uuid4().hex[:6]}", tmp_path / "rl"
    store = open_store(store_url)
    init = warm_start(tmp_path / "bc")

    first = subprocess.Popen(
        rl_command(out, name, init), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.monotonic() + 600
    while not list(store.list(iteration_run(name, 1))):  # v2 is published and iteration 2's episodes are landing
        assert first.poll() is None, f"the run ended before it could be killed:\n{first.stdout.read()}"
        assert time.monotonic() < deadline, "iteration 2's rollout never started"
        time.sleep(0.2)
    first.send_signal(signal.SIGKILL)
    first.wait()
    kept = {key: store.get_bytes(key) for key in store.list(iteration_run(name, 1))}
    assert adapters.versions(store, name) == [1, 2]  # the warm start, then iteration 1's

    second = subprocess.run(rl_command(out, name, init), cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    left = subprocess.run(  # the killed run's environment containers were reaped by the second run's start
        ["docker", "ps", "-aq", "--filter", f"label=loraloop.owner={socket.gethostname()}:{first.pid}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert not left, f"the killed run's containers were left running: {left}"

    # goes on from v2: one more version, none twice; the killed run's episodes kept, none played twice
    assert adapters.versions(store, name) == [1, 2, 3]
    assert [
        adapters.read_metadata(store, name, v)["training_metrics"].get("rl_iteration") for v in ("v1", "v2", "v3")
    ] == [None, 0, 1]
    assert all(store.get_bytes(key) == data for key, data in kept.items())
    for iteration, sampled_with in ((0, "v1"), (1, "v2")):
        episodes = list(iter_episodes(store, iteration_run(name, iteration)))
        assert len(episodes) == 8  # 2 tasks x 4 rollouts, each once
        assert {e.start.adapter.version if e.start.adapter else None for e in episodes} == {sampled_with}
        steps = [s for e in episodes for s in e.steps if s.action_source == "worker"]
        assert steps and all(s.completion_token_ids and len(s.logprobs) == len(s.completion_token_ids) for s in steps)

    # the training batch holds exactly the tokens vLLM sampled, episode by episode
    episodes = list(iter_episodes(store, iteration_run(name, 1)))
    rows, stats = build_batch(episodes, version=2, max_staleness=0, scale_rewards=True, max_length=4096)
    history = json.loads((out / "rl_history.json").read_text())
    assert [r["iteration"] for r in history] == [0, 1, 2] and history[2]["rows"] == stats.rows
    trained = [e for e in episodes if e.start.task_id in {r.task_id for r in rows}]
    sampled = [t for e in trained for _, completion, _ in turns(e) for t in completion]
    assert [t for r in rows for t, m in zip(r.input_ids, r.completion_mask) if m] == sampled
    assert history[1]["rows"] > 0 and history[2]["rows"] > 0, "every group of an iteration tied"
    for row in history[1:]:  # both tasks drawn each iteration ("easy 1/1, normal 1/1, hard 0/0": drawn/held)
        assert sum(int(part.split()[1].split("/")[0]) for part in row["pools"].split(", ")) == 2, row["pools"]
    assert "| pools |" in (out / "rl_report.md").read_text()

    # versioned names: the newest is served, the older one unloaded once its rollouts were over
    served = {m["id"] for m in httpx.get(f"{vllm_url}/models").json()["data"]}
    assert f"{name}-v3" in served and not {f"{name}-v1", f"{name}-v2"} & served
    assert history[2]["version"] == f"{name}-v3" and history[2]["held_out"] is not None
    assert (out / "rl_curve.png").stat().st_size > 1000 and "| iteration |" in (out / "rl_report.md").read_text()
    assert list((out / "tensorboard").glob("events.out.tfevents.*"))

    # `loraloop report --runs '<name>-*'` over what the run stored: each version measured, with what trained it
    measured, _ = measure(store, select_runs(store, [f"{name}-*"]))
    assert [(m.series, m.version.iteration, m.version.trained_by, m.run_id, m.row.episodes) for m in measured] == [
        ("rl_test · test", 1, "bc", f"{name}-eval-v1", 1),
        ("rl_test · test", 3, "rl (RL iteration 2)", f"{name}-eval-v3", 1),
        ("rl_test · train", 1, "bc", f"{name}-it0000", 8),
        ("rl_test · train", 2, "rl (RL iteration 1)", f"{name}-it0001", 8),
    ]
