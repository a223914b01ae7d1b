"""`loraloop agentbench` at a tiny size on vLLM CPU, through the command `make agentbench` runs: teacher
episodes on AgentBench training tasks, BC, online RL from BC, base, BC and BC+RL on held-out tasks, the
report; then the same command again goes on where it stopped and plays nothing twice."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LORALOOP = [sys.executable, "-m", "loraloop.cli"]
TINY = [
    "--name",
    "tiny",
    "--seeds",
    "1",
    "--teacher_tasks",
    "3",
    "--eval_tasks",
    "2",
    "--eval_max_steps",
    "2",
    "--max_tokens",
    "32",
    "--rl_iterations",
    "1",
    "--rl_tasks",
    "2",
    "--rl_rollouts",
    "2",
    "--batch_size",
    "3",
]
HELDOUT = {
    line.split()[0]
    for line in Path("configs/tasks/agentbench-os/heldout.txt").read_text().splitlines()
    if line.strip() and not line.startswith("#")
}


@pytest.mark.usefixtures("docker_ready")
def test_agentbench_learning_runs_every_stage_reports_and_resumes(tmp_path, vllm_url):
    env = {
        **os.environ,
        "LORALOOP_STORE_URL": f"file://{tmp_path / 'store'}",
        "LORALOOP_VLLM_URL": vllm_url,
        "LORALOOP_VLLM_PORT": vllm_url.rsplit(":", 1)[1].split("/")[0],
        "LORALOOP_ADAPTERS_DIR": str(tmp_path / "adapters"),
    }
    first = subprocess.run(
        LORALOOP + ["agentbench", *TINY], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900
    )
    assert first.returncode == 0, first.stderr[-3000:]
    out = tmp_path / "volumes" / "reports" / "tiny"
    progress = json.loads((out / "progress.json").read_text())
    assert list(progress) == [
        "prepare model",
        "teacher episodes",
        "export BC dataset",
        "eval base",
        "train BC (seed 1)",
        "eval BC (seed 1)",
        "RL (seed 1)",
        "eval BC+RL (seed 1)",
    ]
    store = tmp_path / "store" / "trajectories"
    assert len(list((store / "teacher" / "tiny-teacher").glob("*.jsonl"))) == 3
    for run in ("tiny-base", "tiny-bc-s1", "tiny-rl-s1"):
        played = {p.name.split("__")[0] for p in (store / "smollm_zero" / run).glob("*.jsonl")}
        assert len(played) == 2 and all(i in HELDOUT for i in played), (run, played)
    summary = json.loads((out / "summary.json").read_text())
    assert set(summary["seeds"]["1"]) == {"base", "BC", "BC+RL"}
    assert all(r["episodes"] == 2 for r in summary["seeds"]["1"].values())
    report = (out / "report.md").read_text()
    for part in (
        "Held-out success over seeds",
        "McNemar",
        "Success by task family",
        "failure modes of BC+RL",
        "Stages (wall time, s)",
        "/ui/runs/smollm_zero/tiny-rl-s1",
    ):
        assert part in report, part
    for name in ("learning.png", "success.png", "success_by_family.png", "report.csv"):
        assert (out / name).stat().st_size > 0, name
    assert "held-out success (95% CI)" in first.stderr
    again = subprocess.run(
        LORALOOP + ["agentbench", *TINY], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stderr.count("done before") == len(progress)
    assert json.loads((out / "progress.json").read_text()) == progress
    assert len(list((store / "smollm_zero" / "tiny-rl-s1").glob("*.jsonl"))) == 2
