"""Does RL make the agent better than BC alone? Held-out success of base, BC and BC+RL over seeds.

    .venv/bin/python bench/rl_learning.py [--seeds 1,2,3] [--bc_epochs 0.6] [--iterations 3] [--tasks 8]
                                          [--rollouts 4] [--lr 1e-4] [--temperature 0.7]
                                          [--arms decoupled[,bypass,async]] [--work DIR] [--out [PATH]]

For each seed, in one vLLM CPU (SmolLM2-135M-Instruct) and a store under a temporary folder:
1. BC warm start, as `loraloop demo` does it (orchestrator.run_turn on demo_plan): teacher episodes on
   the train variants of the demo's three task families (count-ext, grep-count, config-value), a LoRA
   trained for --bc_epochs, then base and BC evaluated greedily on their held-out test variants.
2. RL from that adapter (`loraloop train rl`, rl_loop.run_rl): --iterations of --tasks train
   variants x --rollouts episodes at --temperature, the held-out variants evaluated greedily after each
   iteration with the same limits as step 1 (4 rounds, 80-token replies).

--arms runs step 2 once per arm from the same warm start, so arms are compared seed by seed (paired):
`decoupled` (the default: decoupled PPO, the ratio clipped against the trainer's own logprobs and a truncated
importance weight to the sampler's, cap 2), `bypass` (the correction off: the ratio taken against the sampler's
stored logprobs, as before issue #30) and `async` (decoupled, rollouts one iteration ahead: --async).

Prints a table per seed, mean and sd of base, BC and each arm's BC+RL with a 95% Wilson interval over the pooled
held-out episodes, each arm against the first (the mean of the per-seed differences), and the target: the first
arm's BC+RL at least 10 points above BC (the baseline, measured in the same run). Writes report.md and
learning.png (and each seed's rl_report.md, rl_curve.png) under bench/results/<the --out file's name, or
rl_learning>/. Exits 1 when the target is missed.
--work DIR goes on with an interrupted run: finished warm starts are kept, RL runs resume (`train rl`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from results import RESULTS, add_out, free_port, local_settings, machine, report

from loraloop.evaluate.report import mean_sd, write_learning_report
from loraloop.evaluate.stats import wilson
from loraloop.orchestrator import demo_plan, run_rl, run_turn
from loraloop.serve import vllm_server
from loraloop.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
MODEL = "SmolLM2-135M-Instruct"
TARGET_POINTS = 10.0
# What each arm sets in RLConfig beside the shared fields (train/config.py's RL flags)
ARMS = {"decoupled": {}, "bypass": {"bypass_mode": True}, "async": {"async_rollouts": True}}


def one_seed(settings: Settings, work: Path, seed: int, args: argparse.Namespace, server: ExitStack) -> dict:
    """Base, BC and BC+RL held-out success for one seed, with the RL run's history."""
    plan = replace(demo_plan(epochs=args.bc_epochs), seeds=(seed,))
    done = work / f"seed-{seed}" / "summary.json"  # a warm start made by an earlier, interrupted run
    turn = (
        json.loads(done.read_text())
        if done.is_file()
        else run_turn(settings, work / f"seed-{seed}", plan, seed, server)
    )
    arms = {}
    for arm in args.arms:
        started = time.monotonic()
        rl = run_rl(
            plan.rl_config(
                settings,
                work / f"seed-{seed}",
                output_dir=str(work / f"seed-{seed}" / f"rl-{arm}"),
                adapter_name=f"rl-s{seed}-{arm}",
                eval_tasks=None,
                eval_every=1,
                iterations=args.iterations,
                tasks_per_iteration=args.tasks,
                rollouts_per_task=args.rollouts,
                lr=args.lr,
                temperature=args.temperature,
                seed=seed,
                **ARMS[arm],
            ),
            plan.eval_settings(settings),
        )
        held = [r.get("held_out") for r in rl["history"]]
        arms[arm] = {"rl": held[-1], "rl_curve": held, "history": rl["history"], "wall_s": time.monotonic() - started}
    return {
        "seed": seed,
        "base": turn["results"][plan.base]["success_rate"],
        "bc": turn["results"][plan.tuned]["success_rate"],
        "bc_again": arms[args.arms[0]]["rl_curve"][0],
        "arms": arms,
        "episodes": turn["results"][plan.base]["episodes"],
        "stages_s": turn["stages_s"],
    }


def interval(rates: list[float], episodes: int) -> str:
    """The 95% Wilson interval of the held-out episodes pooled over seeds (each seed `episodes` of them)."""
    low, high = wilson(sum(round(rate * episodes) for rate in rates), episodes * len(rates))
    return f"{low:.0%}–{high:.0%}"


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
        "--arms",
        default="decoupled",
        type=lambda text: text.split(","),
        help=f"comma-separated RL arms, each from the same warm start: {', '.join(ARMS)} (the first is the target's)",
    )
    parser.add_argument(
        "--work",
        type=Path,
        default=None,
        help="the folder of an interrupted run (store, warm starts, RL runs) to go on with",
    )
    add_out(parser, "rl_learning")
    args = parser.parse_args()
    unknown = [arm for arm in args.arms if arm not in ARMS]
    if unknown or len(set(args.arms)) != len(args.arms):
        parser.error(f"--arms {','.join(args.arms)}: each once, from {', '.join(ARMS)}")
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
    out = RESULTS / (args.out.stem if args.out else "rl_learning")
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(
        json.dumps({"args": vars(args) | {"out": str(args.out)}, "seeds": results}, indent=2, default=str)
    )
    label = {arm: "BC+RL" if args.arms == ["decoupled"] else f"BC+RL ({arm})" for arm in args.arms}
    rates = {"base": [r["base"] for r in results], "BC": [r["bc"] for r in results]}
    rates |= {label[arm]: [r["arms"][arm]["rl"] for r in results] for arm in args.arms}
    per_seed = results[0]["episodes"]
    episodes = {name: per_seed * len(results) for name in rates}
    notes = (
        f"BC warm start: {args.bc_epochs} epoch(s) on the teacher episodes of the demo's train variants. "
        f"RL: {args.iterations} iterations x {args.tasks} tasks x {args.rollouts} rollouts at temperature "
        f"{args.temperature}, lr {args.lr}; arms {', '.join(args.arms)}, each from the same warm start. "
        f"Held-out: the demo's {per_seed} test variants, greedy, 4 rounds, 80-token replies."
    )
    write_learning_report(rates, episodes, seeds, out, "Held-out success: base, BC, BC+RL", notes)
    first = label[args.arms[0]]
    gain = (mean_sd(rates[first])[0] - mean_sd(rates["BC"])[0]) * 100
    lines = [
        machine(),
        "",
        f"`.venv/bin/python bench/rl_learning.py --seeds {args.seeds} --arms {','.join(args.arms)} --iterations "
        f"{args.iterations} --tasks {args.tasks} --rollouts {args.rollouts}`; SmolLM2-135M-Instruct on vLLM CPU; "
        f"{len(seeds)} seeds; {notes}",
        "",
        "| seed | base | BC | BC (again, in the RL run) | " + " | ".join(label.values()) + " | held-out by iteration |",
        "|---:|---:|---:|---:|" + "---:|" * len(args.arms) + "---|",
    ]
    lines += [
        f"| {r['seed']} | {r['base']:.0%} | {r['bc']:.0%} | {r['bc_again']:.0%} | "
        + " | ".join(f"{r['arms'][arm]['rl']:.0%}" for arm in args.arms)
        + " | "
        + "; ".join(
            f"{arm}: " + " → ".join(f"{h:.0%}" for h in r["arms"][arm]["rl_curve"] if h is not None)
            for arm in args.arms
        )
        + " |"
        for r in results
    ]
    lines += ["", "| model | mean | sd | 95% CI (pooled episodes) | RL wall s (mean) |", "|---|---:|---:|---:|---:|"]
    walls = {label[arm]: mean_sd([r["arms"][arm]["wall_s"] for r in results])[0] for arm in args.arms}
    lines += [
        f"| {name} | {mean_sd(values)[0]:.1%} | {mean_sd(values)[1]:.1%} | {interval(values, per_seed)} | "
        + (f"{walls[name]:.0f} |" if name in walls else "- |")
        for name, values in rates.items()
    ]
    lines += [""]
    for arm in args.arms[1:]:
        diffs = [r["arms"][arm]["rl"] - r["arms"][args.arms[0]]["rl"] for r in results]
        lines.append(
            f"- {label[arm]} − {first}, seed by seed: "
            + ", ".join(f"{d * 100:+.0f}" for d in diffs)
            + f" points (mean {mean_sd(diffs)[0] * 100:+.1f}, sd {mean_sd(diffs)[1] * 100:.1f})"
        )
    lines += [
        f"- {first} − BC: {gain:+.1f} points (target ≥ +{TARGET_POINTS:.0f}): "
        + ("met" if gain >= TARGET_POINTS else "MISSED"),
        f"- report and plot: {out.relative_to(ROOT) / 'report.md'}",
    ]
    report("\n".join(lines), args.out)
    return 0 if gain >= TARGET_POINTS else 1


if __name__ == "__main__":
    sys.exit(main())
