"""HALO modes benchmark: every smol_* mode of configs/experiments.yaml on the bundled test tasks with SmolLM2.

    .venv/bin/python bench/halo_modes.py [--shell-tasks 3] [--web-tasks 3] [--attempts 2] [--max-steps 6]
                                         [--concurrency 4] [--out [PATH]]

Starts a vLLM CPU server with SmolLM2-135M-Instruct (the worker and, where a mode has one, the manager) and
the bundled sites, then plays each mode on the same tasks (a seeded sample of the test split of
configs/tasks/os, in Docker, and of configs/tasks/web, in Chromium; `--attempts` each, temperature 0),
stored in a temporary file store. Modes run one after another, and a mode's attempts too (attempt k on
every task, `--concurrency` episodes at once, then attempt k+1): a mode's episodes share its Verified Action
Cache (in memory, as with the embedded default), so a later attempt can reuse what an earlier one verified.
Per mode: success rate, median steps, manager calls, cache hits and misses, recovery actions and macro steps,
all read from the stored records. The modes whose worker is an adapter (smol_worker_bc, smol_worker_dpo,
smol_pure_grpo) run on the base model: no adapter is trained here, so they measure the orchestrator's shape, not
the adapter.

The baseline is smol_baseline_worker (the worker alone) in the same run; each row's success is also given
as the difference from it. Success counts every planned episode (one that failed for the machine's sake,
a timeout or a site that did not load, counts as unsolved and is listed apart); median steps are over the
episodes that were played to their end. There is no target: SmolLM2-135M solves few of these tasks, and the table is
what it is. `--out` writes bench/results/halo_modes.md and a PNG next to it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from results import ROOT, add_out, free_port, machine, report, timed

from loraloop.charts import chart
from loraloop.rollout.experiments import load_experiments
from loraloop.rollout.sampler import plan_rollout
from loraloop.serve import vllm_server
from loraloop.service.client import execute
from loraloop.settings import Settings
from loraloop.store import open_store
from loraloop.store.trajectories import iter_episodes
from loraloop.task_registry import load_registry
from loraloop_sites import serving

BASELINE = "smol_baseline_worker"
PLAYED = ("completed", "round_limit")  # episodes that ended by the agent's doing
REGISTRIES = (("configs/tasks/os", "shell"), ("configs/tasks/web", "web"))


def plan(experiment, sizes: dict[str, int], attempts: int, max_steps: int, model: str) -> list[list]:
    """A mode's episodes on the sampled tasks, one run per attempt (run id `<mode>-a<k>`), attempts in order."""
    experiment = experiment.model_copy(update={"max_steps": max_steps})
    runs: list[list] = [[] for _ in range(attempts)]
    for registry, kind in REGISTRIES:
        specs = plan_rollout(
            load_registry(str(ROOT / registry)),
            registry,
            experiment,
            run_id=experiment.name,
            subset="test",
            sample_size=sizes[kind],
            rollouts_per_task=attempts,
            seed=42,
            task_seed=123,
            temperature=None,
            model=model,
        )
        for spec in specs:
            runs[spec.attempt].append(replace(spec, run_id=f"{experiment.name}-a{spec.attempt}"))
    return runs


def row(name: str, episodes: list, wall_s: float) -> dict:
    """One mode's figures from its stored episodes."""
    steps = [s for e in episodes for s in e.steps]
    played = [e.end.total_steps for e in episodes if e.end.status in PLAYED]
    return {
        "mode": name,
        "episodes": len(episodes),
        "solved": sum(e.end.success for e in episodes),
        "median_steps": statistics.median(played) if played else float("nan"),
        "wall_s": wall_s,
        "manager_calls": sum(e.end.manager_calls for e in episodes),
        "cache_hits": sum(e.end.cache_hits for e in episodes),
        "cache_misses": sum(e.end.cache_misses for e in episodes),
        "recoveries": sum(e.end.recoveries for e in episodes),
        "macro_steps": sum(s.action_source == "macro" for s in steps),
        "errors": sum(e.end.error_count for e in episodes),
        "failed": sum(e.end.status not in PLAYED for e in episodes),
    }


def markdown(rows: list[dict], args) -> str:
    """The results table, with how it was measured."""
    base = next(r for r in rows if r["mode"] == BASELINE)
    rate = lambda r: r["solved"] / r["episodes"]  # noqa: E731
    lines = [
        "# HALO modes on the bundled test tasks (SmolLM2-135M-Instruct)",
        "",
        machine(),
        "",
        f"{args.shell_tasks} shell + {args.web_tasks} web test tasks (seed 42), {args.attempts} attempt(s) each, "
        f"temperature 0, "
        f"max {args.max_steps} steps, SmolLM2-135M-Instruct on vLLM CPU as worker and manager; adapter modes on "
        f"the base model (no adapter trained), {args.concurrency} episodes at once. Baseline: {BASELINE}, same "
        "run.",
        "",
        "| mode | success rate | vs baseline | median steps | manager calls | cache hits | cache misses "
        "| recoveries | macro steps | action errors | episodes failed (not the agent's doing) | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['mode']} | {rate(r):.0%} ({r['solved']}/{r['episodes']}) | "
            f"{100 * (rate(r) - rate(base)):+.0f} pts | {r['median_steps']:g} | {r['manager_calls']} | "
            f"{r['cache_hits']} | {r['cache_misses']} | {r['recoveries']} | {r['macro_steps']} | "
            f"{r['errors']} | {r['failed']} | {r['wall_s']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def draw(rows: list[dict], path: Path) -> None:
    """Success rate per mode, with its manager calls and cache hits written on the bar."""
    with chart(
        path, "HALO modes with SmolLM2 (bundled test tasks)", "success rate (%)", size=(max(7, 1.3 * len(rows)), 4)
    ) as ax:
        bars = ax.bar(
            [r["mode"].removeprefix("smol_") for r in rows],
            [100 * r["solved"] / r["episodes"] for r in rows],
            color="#4C72B0",
        )
        for bar, r in zip(bars, rows):
            ax.annotate(
                f"mgr {r['manager_calls']}\nhit {r['cache_hits']}",
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                va="bottom",
                fontsize=7,
            )
        ax.set_ylim(0, 100)
        ax.tick_params(axis="x", labelrotation=30, labelsize=7)


def main() -> int:
    """Run every smol_* mode, print (and with --out save) the table and the chart."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shell-tasks", type=int, default=3)
    parser.add_argument("--web-tasks", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--attempts", type=int, default=2)
    parser.add_argument("--max-steps", type=int, default=6)
    add_out(parser, "halo_modes")
    args = parser.parse_args()
    experiments = {
        n: e for n, e in load_experiments(ROOT / "configs" / "experiments.yaml").items() if n.startswith("smol_")
    }
    port = free_port()
    base = Settings(vllm_port=port)
    url = vllm_server.start(base, port=port, timeout=900)
    try:
        with serving() as sites, tempfile.TemporaryDirectory() as store_dir:
            settings = Settings(
                vllm_url=url, sites_url=sites, store_url=f"file://{store_dir}", max_tokens=96, request_timeout_s=600
            )
            store = open_store(settings=settings)
            rows = []
            for name, experiment in experiments.items():
                runs = plan(
                    experiment,
                    {"shell": args.shell_tasks, "web": args.web_tasks},
                    args.attempts,
                    args.max_steps,
                    settings.base_model_name,
                )
                _, wall_s = timed(
                    lambda runs=runs: [execute(run, settings, concurrency=args.concurrency, quiet=True) for run in runs]
                )
                rows.append(row(name, list(iter_episodes(store, f"trajectories/{name}/")), wall_s))
                print(f"{name}: {rows[-1]}", file=sys.stderr)
    finally:
        vllm_server.stop(port)
    report(markdown(rows, args), args.out)
    if args.out is not None:
        draw(rows, args.out.with_suffix(".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
