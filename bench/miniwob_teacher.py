"""The scripted MiniWoB++ solver's coverage: each type it has a strategy for, played on the given seeds through the
browsergym kind (real Chromium, MiniWoB's pages on loopback), success counted by MiniWoB's own reward.

    PYTHONPATH=services .venv/bin/python bench/miniwob_teacher.py --seeds 0-9 --out  # bench/results/miniwob_teacher.md

The solver reads only the goal and the observation (envs/browsergym/teacher.py). It always exits 0: a measurement,
not a gate (the parity test checks the solver's sequences on 22 types).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from results import add_out, machine, report

from loraloop.envs.base import EnvOptions
from loraloop.envs.browsergym.teacher import SOLVED
from loraloop.kinds.browsergym import KIND
from loraloop.settings import Settings
from loraloop.tasks.browsergym.format import one_seed_task
from loraloop.tasks.browsergym.miniwob import train_types

ROOT = Path(__file__).resolve().parents[1]


def play(task_type: str, seed: int, settings: Settings) -> tuple[bool, int, str]:
    """One solver episode on one seed: (solved, steps, the last action)."""
    task = one_seed_task(f"miniwob.{task_type}", seed, "bench")
    env = KIND.envs.make_env(task, settings, EnvOptions())
    try:
        observation, _ = env.reset(seed=0)
        teacher = KIND.envs.teacher(task, env)
        for turn in range(env.max_rounds):
            reply = teacher.act([{"role": "user", "content": observation}])
            step = env.step(reply.text)
            if step.done:
                return step.reward > 0, turn + 1, teacher.history[-1]
            observation = step.observation
        return False, env.max_rounds, teacher.history[-1]
    finally:
        env.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", default="0-9", help="first-last seed, e.g. 0-9")
    parser.add_argument("--types", nargs="*", default=list(SOLVED), help="task types (default: every solved one)")
    add_out(parser, "miniwob_teacher")
    args = parser.parse_args()
    first, last = (int(x) for x in args.seeds.split("-"))
    settings = Settings()
    trained = {t.removeprefix("miniwob.") for t in train_types(ROOT / "configs/tasks/miniwob/train_types.txt")}
    rows, started = [], time.monotonic()
    for task_type in args.types:
        outcomes = [play(task_type, seed, settings) for seed in range(first, last + 1)]
        failed = [f"{seed}: {action}" for seed, (ok, _, action) in zip(range(first, last + 1), outcomes) if not ok]
        wins = sum(ok for ok, _, _ in outcomes)
        rows.append(
            f"| {task_type} | {'trained' if task_type in trained else 'held out'} | {wins}/{len(outcomes)} | "
            f"{sum(n for _, n, _ in outcomes) / len(outcomes):.1f} | {'; '.join(failed)[:160]} |"
        )
        print(rows[-1], flush=True)
    solved = sum(row.split(" | ")[2].split("/")[0] == row.split(" | ")[2].split("/")[1] for row in rows)
    markdown = "\n".join(
        [
            "# The scripted MiniWoB++ solver's coverage",
            "",
            f"Seeds {first}-{last} (train seeds), 15 steps at most, MiniWoB's own reward; "
            f"{solved}/{len(rows)} types solved on every seed; {time.monotonic() - started:.0f} s.",
            "",
            "| type | in the registry | solved | steps (mean) | failed seeds: last action |",
            "|---|---|---|---|---|",
            *rows,
            "",
            machine(),
        ]
    )
    report(markdown, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
