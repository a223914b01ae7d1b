"""The learning run (learning.py: `loraloop miniwob`, `loraloop agentbench`) at a tiny size on vLLM CPU and Chromium,
through the command `make miniwob` runs: the scripted solver's episodes on trained MiniWoB++ types' train seeds, BC,
online RL from BC (browser episodes), base, BC and BC+RL on the trained types' held-out seeds and, for transfer, on a
held-out type; the report with both tables; then the same command again goes on where it stopped and plays nothing
twice. `loraloop agentbench` is the same code with AgentBench OS's registry and experiments: its split is checked in
tests/unit/test_agentbench_split.py, its shell stages (scripted teacher, BC, RL, eval on Docker) in the loop and RL
tests; one learning run in the suite, as each costs about two minutes of the 2-core VM."""

import json
import os
import subprocess
import sys

LORALOOP = [sys.executable, "-m", "loraloop.cli"]
TINY = [
    "--name", "tinywob", "--seeds", "1",
    "--train_subset", "train+click-button,click-link",
    "--heldout_subset", "heldout-seed+click-button",
    "--transfer_subset", "heldout-type+enter-text-2",
    "--teacher_rollouts", "2", "--eval_rollouts", "1", "--eval_max_steps", "2", "--max_tokens", "24",
    "--rl_iterations", "1", "--rl_tasks", "1", "--rl_rollouts", "2", "--batch_size", "2",
]  # fmt: skip


def test_miniwob_learning_runs_every_stage_with_a_transfer_set(tmp_path, vllm_url, chromium):
    env = {
        **os.environ,
        "LORALOOP_STORE_URL": f"file://{tmp_path / 'store'}",
        "LORALOOP_VLLM_URL": vllm_url,
        "LORALOOP_VLLM_PORT": vllm_url.rsplit(":", 1)[1].split("/")[0],
        "LORALOOP_ADAPTERS_DIR": str(tmp_path / "adapters"),
    }
    run = subprocess.run(LORALOOP + ["miniwob", *TINY], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=900)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    out = tmp_path / "volumes" / "reports" / "tinywob"
    progress = json.loads((out / "progress.json").read_text())
    assert list(progress) == [
        "prepare model",
        "teacher episodes",
        "export BC dataset",
        "eval base",
        "eval base, transfer",
        "train BC (seed 1)",
        "eval BC (seed 1)",
        "RL (seed 1)",
        "eval BC+RL (seed 1)",
        "eval BC (seed 1), transfer",  # the held-out figures (the targets') first, transfer's after
        "eval BC+RL (seed 1), transfer",
    ]
    store = tmp_path / "store" / "trajectories"
    teacher = [
        json.loads(p.read_text().splitlines()[-1])
        for p in (store / "miniwob_teacher" / "tinywob-teacher").glob("*.jsonl")
    ]
    assert len(teacher) == 4 and all(end["reward"] == 1.0 for end in teacher), teacher  # 2 types x 2 train seeds
    for run_id, task in (("tinywob-bc-s1", "heldout-miniwob.click-button"),
                         ("tinywob-bc-s1-transfer", "heldout-miniwob.enter-text-2")):  # fmt: skip
        played = sorted(p.name.split("__")[0] for p in (store / "smollm_miniwob" / run_id).glob("*.jsonl"))
        assert played == [task], (run_id, played)
    summary = json.loads((out / "summary.json").read_text())
    for part in ("seeds", "transfer"):
        assert set(summary[part]["1"]) == {"base", "BC", "BC+RL"}, summary[part]
        assert all(r["episodes"] == 1 for r in summary[part]["1"].values()), summary[part]
    report = (out / "report.md").read_text()
    for part in ("Held-out success over seeds", "## Transfer: `heldout-type+enter-text-2`", "| enter-text-2 |",
                 "| click-button |", "failure modes of BC+RL"):  # fmt: skip
        assert part in report, part
    assert "held-out success (95% CI)" in run.stderr
    again = subprocess.run(LORALOOP + ["miniwob", *TINY], env=env, cwd=tmp_path, capture_output=True, text=True,
                           timeout=600)  # fmt: skip
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stderr.count("done before") == len(progress)
    assert json.loads((out / "progress.json").read_text()) == progress
    assert len(list((store / "smollm_miniwob" / "tinywob-rl-s1").glob("*.jsonl"))) == 1
