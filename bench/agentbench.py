"""AgentBench OS throughput: training tokens/s and rollout episodes/min, each beside its baseline in this run.

    .venv/bin/python bench/agentbench.py [--episodes 40] [--concurrency 8] [--train_episodes 24] [--out]

On the same AgentBench training tasks (configs/tasks/agentbench-os, a seeded sample of the train split):

- rollout: the scripted teacher's episodes through loraloop (warm container pool, one persistent shell per
  episode) against AgentBench's own runner's per-episode work reproduced with the Docker CLI: `docker run` a
  fresh container, `docker exec` the init, the example and each check, `docker rm -f` (its
  src/server/tasks/os_interaction/task.py does these through docker-py), at the same concurrency;
- training: loraloop's BC (`train_bc`, whole episodes as one sequence, TRL SFTTrainer + PEFT) against plain TRL
  SFT on the same episodes as exported, one prompt/completion row per turn, the same LoRA, batch and dtype. Both
  report tokens/s and the seconds one epoch of the same episodes takes (what a user waits for).

Prints a Markdown table with the ratios; no target (issue #29 asks for the figures), so it exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from results import add_out, machine, report

from loraloop.datasets.export import export
from loraloop.rollout.experiments import get_experiment
from loraloop.rollout.sampler import plan_rollout
from loraloop.service.client import execute
from loraloop.settings import Settings
from loraloop.store import open_store
from loraloop.task_registry import load_registry
from loraloop.train.bc import train_bc
from loraloop.train.config import BCConfig

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = "configs/tasks/agentbench-os"
IMAGE = "loraloop/os-env:latest"


def docker_episode(task) -> None:
    """AgentBench's runner's work for one episode, with the Docker CLI: a fresh container, init, the example,
    each check script, removal."""
    box = subprocess.run(
        ["docker", "run", "-d", "--network", "none", IMAGE, "sleep", "infinity"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    try:
        for script in [*task.init, task.example, *[c for c in getattr(task.evaluation, "checks", ()) if c]]:
            code = script.source(task.scripts_dir)
            shell = ["python3", "-c", code] if script.language == "python" else ["bash", "-c", code]
            subprocess.run(["docker", "exec", box, *shell], capture_output=True, timeout=120)
    finally:
        subprocess.run(["docker", "rm", "-f", box], capture_output=True)


def rollout_rates(settings: Settings, tasks: list, run_id: str, concurrency: int) -> tuple[float, float]:
    """(loraloop teacher episodes/min, AgentBench-style episodes/min) on the same tasks and concurrency."""
    registry = load_registry(REGISTRY)
    subset_ids = {t.index for t in tasks}
    registry.tasks = [t for t in registry.tasks if t.index in subset_ids]
    specs = plan_rollout(
        registry,
        REGISTRY,
        get_experiment(settings.experiments_path, "teacher"),
        run_id=run_id,
        subset=None,
        sample_size=None,
        rollouts_per_task=1,
        seed=0,
        task_seed=0,
        temperature=None,
    )
    started = time.perf_counter()
    execute(specs, settings, concurrency=concurrency, quiet=True)
    ours = len(specs) / (time.perf_counter() - started) * 60
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(docker_episode, tasks))
    theirs = len(tasks) / (time.perf_counter() - started) * 60
    return ours, theirs


def plain_sft(rows_path: Path, out: Path, cfg: BCConfig) -> dict:
    """Plain TRL SFT on the exported rows (one prompt/completion row per turn), loraloop's LoRA, batch and dtype:
    tokens, seconds, tokens/s."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    from loraloop.train.backend import load_model
    from loraloop.train.data import load_rows
    from loraloop.train.harness import common_args

    rows = load_rows(str(rows_path), ("prompt", "completion"))
    model, tokenizer, peft_config = load_model(cfg)
    args = SFTConfig(
        **{**common_args(cfg), "output_dir": str(out), "report_to": []},
        max_length=cfg.max_length,
        completion_only_loss=True,
    )
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    tokens = sum(len(x["input_ids"]) for x in trainer.train_dataset)
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    return {"tokens": tokens, "seconds": seconds, "tokens_per_s": tokens / seconds, "rows": len(rows)}


def main() -> int:
    """Run both comparisons and print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=40, help="teacher episodes in the rollout comparison")
    parser.add_argument("--concurrency", type=int, default=8, help="episodes in flight, both sides")
    parser.add_argument("--train_episodes", type=int, default=24, help="episodes whose rows both trainers learn")
    add_out(parser, "agentbench_throughput")
    args = parser.parse_args()
    os.chdir(ROOT)
    work = Path(tempfile.mkdtemp(prefix="bench-agentbench-"))
    settings = Settings(store_url=f"file://{work / 'store'}")
    tasks = load_registry(REGISTRY).select("train", args.episodes, seed=0)
    ours, theirs = rollout_rates(settings, tasks, "bench", args.concurrency)
    manifest = export(open_store(settings=settings), "trajectories/teacher/bench", work / "ds", ["bc"])
    rows = [json.loads(line) for line in (work / "ds" / "bc.jsonl").read_text().splitlines()]
    chosen = set(sorted({r["task_id"] for r in rows})[: args.train_episodes])  # one teacher episode a task
    keep = [r for r in rows if r["task_id"] in chosen]
    (work / "ds" / "some.jsonl").write_text("".join(json.dumps(r) + "\n" for r in keep))
    cfg = BCConfig(
        base_model=str(settings.model_dir),
        dataset_path=str(work / "ds" / "some.jsonl"),
        output_dir=str(work / "bc"),
        epochs=1.0,
        batch_size=4,
        whole_episodes=True,
    )
    started = time.perf_counter()
    mine = train_bc(cfg)
    mine_s = time.perf_counter() - started
    plain = plain_sft(work / "ds" / "some.jsonl", work / "plain", cfg)
    lines = [
        f"# AgentBench OS throughput\n\n{machine()}; `bench/agentbench.py --episodes {args.episodes} "
        f"--concurrency {args.concurrency} --train_episodes {args.train_episodes}`; {manifest['episodes']} "
        "teacher episodes exported.\n",
        "| what | loraloop | baseline (same run) | ratio |",
        "|---|---:|---:|---:|",
        f"| rollout, teacher episodes/min ({args.concurrency} in flight) | {ours:.1f} | {theirs:.1f} "
        f"(AgentBench's per-episode Docker work) | {ours / theirs:.2f}× |",
        f"| BC training tokens/s | {mine['tokens_per_s']:.1f} | {plain['tokens_per_s']:.1f} (plain TRL SFT, a row "
        f"per turn) | {mine['tokens_per_s'] / plain['tokens_per_s']:.2f}× |",
        f"| one epoch of the same {len(keep)} rows, seconds (with model load) | {mine_s:.0f} | "
        f"{plain['seconds']:.0f} (training only) | {plain['seconds'] / mine_s:.2f}× faster |",
        f"| tokens per epoch | {mine['train_tokens']} | {plain['tokens']} | "
        f"{plain['tokens'] / mine['train_tokens']:.2f}× fewer |",
    ]
    report("\n".join(lines), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
