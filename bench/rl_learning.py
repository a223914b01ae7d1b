"""Does RL make the agent better than BC alone? Held-out success of base, BC and BC+RL over seeds.

    .venv/bin/python bench/rl_learning.py [--seeds 1,2,3] [--bc_epochs 0.6] [--iterations 3] [--tasks 8]
                                          [--rollouts 4] [--lr 1e-4] [--temperature 0.7]
                                          [--work DIR] [--out [PATH]]

For each seed, in one vLLM CPU (SmolLM2-135M-Instruct) and a store under a temporary folder:
1. BC warm start, as `loraloop demo` does it (orchestrator.run_turn on demo_plan): teacher episodes on
   the train variants of the demo's three task families (count-ext, grep-count, config-value), a LoRA
   trained for --bc_epochs, then base and BC evaluated greedily on their held-out test variants.
2. RL from that adapter (`loraloop train rl`, rl_loop.run_rl): --iterations of --tasks train
   variants x --rollouts episodes at --temperature, the held-out variants evaluated greedily after each
   iteration with the same limits as step 1 (4 rounds, 80-token replies).

Prints a table per seed, mean and sd of base, BC and BC+RL, and the target: BC+RL at least 10 points
above BC (the baseline, measured in the same run). Writes report.md and learning.png (and each seed's
rl_report.md, rl_curve.png) under bench/results/rl_learning/. Exits 1 when the target is missed.
--work DIR goes on with an interrupted run: finished warm starts are kept, RL runs resume (`train rl`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from results import RESULTS, add_out, free_port, local_settings, report

from loraloop.evaluate.report import mean_sd, write_learning_report
from loraloop.orchestrator import demo_plan, run_rl, run_turn
from loraloop.serve import vllm_server
from loraloop.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
MODEL = "SmolLM2-135M-Instruct"
TARGET_POINTS = 10.0


def one_seed(settings: Settings, work: Path, seed: int, args: argparse.Namespace, server: ExitStack) -> dict:
    """Base, BC and BC+RL held-out success for one seed, with the RL run's history."""
    plan = replace(demo_plan(epochs=args.bc_epochs), seeds=(seed,))
    done = work / f"seed-{seed}" / "summary.json"  # a warm start made by an earlier, interrupted run
    turn = (
        json.loads(done.read_text())
        if done.is_file()
        else run_turn(settings, work / f"seed-{seed}", plan, seed, server)
    )
    rl = run_rl(
        plan.rl_config(
            settings,
            work / f"seed-{seed}",
            adapter_name=f"rl-s{seed}",
            eval_tasks=None,
            eval_every=1,
            iterations=args.iterations,
            tasks_per_iteration=args.tasks,
            rollouts_per_task=args.rollouts,
            lr=args.lr,
            temperature=args.temperature,
            seed=seed,
        ),
        plan.eval_settings(settings),
    )
    held = [r.get("held_out") for r in rl["history"]]
    return {
        "seed": seed,
        "base": turn["results"][plan.base]["success_rate"],
        "bc": turn["results"][plan.tuned]["success_rate"],
        "bc_again": held[0],
        "rl": held[-1],
        "rl_curve": held,
        "episodes": turn["results"][plan.base]["episodes"],
        "history": rl["history"],
        "stages_s": turn["stages_s"],
    }


def main() -> int:
    """Run every seed, print and save the tables, return 1 when BC+RL misses the target."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default="1,2,3", help="comma-separated training seeds")
    parser.add_argument("--bc_epochs", type=float, default=0.6, help="epochs of the BC warm start")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=8, help="train variants per RL iteration")
    parser.add_argument("--rollouts", type=int, default=4, help="episodes per task (the group)")
    parser.add_argument("--lr", type=float, default=1e-4, help="RL learning rate")
    parser.add_argument("--temperature", type=float, default=0.7, help="RL rollouts' sampling temperature")
    parser.add_argument(
        "--work",
        type=Path,
        default=None,
        help="the folder of an interrupted run (store, warm starts, RL runs) to go on with",
    )
    add_out(parser, "rl_learning")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    os.chdir(ROOT)
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-rl-learning-"))
    port = free_port()
    settings = local_settings(work, port, MODEL)
    vllm_server.start(settings, port=port, timeout=900)
    try:
        with ExitStack() as server:
            results = [one_seed(settings, work, seed, args, server) for seed in seeds]
    finally:
        vllm_server.stop(port)
    out = RESULTS / "rl_learning"
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(
        json.dumps({"args": vars(args) | {"out": str(args.out)}, "seeds": results}, indent=2, default=str)
    )
    names = {"base": "base", "bc": "BC", "rl": "BC+RL"}
    rates = {label: [r[key] for r in results] for key, label in names.items()}
    episodes = {label: sum(r["episodes"] for r in results) for label in names.values()}
    notes = (
        f"BC warm start: {args.bc_epochs} epoch(s) on the teacher episodes of the demo's train variants. "
        f"RL: {args.iterations} iterations x {args.tasks} tasks x {args.rollouts} rollouts at temperature "
        f"{args.temperature}, "
        f"lr {args.lr}. Held-out: the demo's test variants, greedy, 4 rounds, 80-token replies."
    )
    write_learning_report(rates, episodes, seeds, out, "Held-out success: base, BC, BC+RL", notes)
    (bc_mean, _), (rl_mean, _) = mean_sd(rates["BC"]), mean_sd(rates["BC+RL"])
    gain = (rl_mean - bc_mean) * 100
    lines = [
        f"{os.cpu_count()} CPUs, SmolLM2-135M-Instruct on vLLM CPU; {len(seeds)} seeds; {notes}",
        "",
        "| seed | base | BC | BC (again, in the RL run) | BC+RL | held-out by iteration |",
        "|---:|---:|---:|---:|---:|---|",
    ]
    lines += [
        f"| {r['seed']} | {r['base']:.0%} | {r['bc']:.0%} | {r['bc_again']:.0%} | {r['rl']:.0%} | "
        + " → ".join(f"{h:.0%}" for h in r["rl_curve"] if h is not None)
        + " |"
        for r in results
    ]
    lines += ["", "| model | mean | sd |", "|---|---:|---:|"]
    lines += [f"| {label} | {mean_sd(values)[0]:.1%} | {mean_sd(values)[1]:.1%} |" for label, values in rates.items()]
    lines += [
        "",
        f"- BC+RL − BC: {gain:+.1f} points (target ≥ +{TARGET_POINTS:.0f}): "
        + ("met" if gain >= TARGET_POINTS else "MISSED"),
        f"- report and plot: {out / 'report.md'}",
    ]
    report("\n".join(lines), args.out)
    return 0 if gain >= TARGET_POINTS else 1


if __name__ == "__main__":
    sys.exit(main())
