"""Speed of the browsergym kind against BrowserGym's own `BrowserEnv`, on the same Debian Chromium, MiniWoB++ pages,
task types, seed and actions, in one run (issue #28 item 5): reset and step p50/p95, with the rewards compared.

    PYTHONPATH=services .venv/bin/python bench/browsergym_env.py [--types T ...] [--out [PATH]]

Each type's episode (envs/browsergym/parity.py: the scripted solver's actions, or a fixed wrong sequence) is played
three times: once by loraloop's kind (one Chromium per process, a fresh context per episode: the pool is warmed by
one unmeasured episode first), then replayed by BrowserGym with its defaults (two fresh Chromium processes per
reset, `slow_mo` from the task, a 0.5 s wait before each observation) and by BrowserGym with its fast settings
(`slow_mo=0`, no wait). A step is timed from the call to the observation returned, reset likewise. Targets: step
>= 3x and reset >= 10x faster than BrowserGym's defaults, with the same rewards; the ratios against its fast
settings are reported beside them.
Exits 1 when a reward differs or a target is missed.
"""

from __future__ import annotations

import argparse
import statistics
import sys

from results import add_out, machine, percentile, report

from loraloop.envs.browsergym.parity import SOLVED, WRONG, Parity, Timings, play_browsergym, play_ours
from loraloop.settings import Settings

TARGETS = {"reset": 10.0, "step": 3.0}  # BrowserGym's default / ours, p50


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--types", nargs="*", default=[*SOLVED, *WRONG], help="task types (default: the parity set)")
    add_out(parser, "browsergym_env")
    args = parser.parse_args()
    settings = Settings()
    play_ours(args.types[0], settings)  # warms the pool: its Chromium starts once per process
    times: dict[str, dict[str, list[float]]] = {
        side: {"reset": [], "step": []} for side in ("loraloop", "BrowserGym default", "BrowserGym fast")
    }
    differ = []

    def count(side: str, timings: Timings) -> None:
        times[side]["reset"].append(timings.reset)
        times[side]["step"].extend(timings.steps)

    for task_type in args.types:
        ours = Timings()
        goal, steps = play_ours(task_type, settings, ours)
        count("loraloop", ours)
        for fast in (False, True):
            theirs = Timings()
            their_goal, outcomes = play_browsergym(task_type, settings.chromium_path, steps, fast, theirs)
            if not Parity(task_type, goal, their_goal, steps, outcomes).matches:
                differ.append(f"{task_type} ({'fast' if fast else 'default'})")
            count("BrowserGym fast" if fast else "BrowserGym default", theirs)
        print(task_type, {side: round(statistics.median(t["reset"]), 2) for side, t in times.items() if t["reset"]})
    mine = {what: percentile(times["loraloop"][what], 50) for what in TARGETS}
    lines = [
        "# The browsergym kind against BrowserGym's own env (MiniWoB++)",
        "",
        f"{len(args.types)} task types, seed of parity.py, the same actions on both sides; "
        f"rewards identical on {2 * len(args.types) - len(differ)}/{2 * len(args.types)} episodes"
        + (f" (differ: {', '.join(differ)})" if differ else "")
        + ".",
        "",
        "| env | resets | reset p50 (ms) | reset p95 (ms) | steps | step p50 (ms) | step p95 (ms) | "
        "reset: / loraloop | step: / loraloop |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for side, t in times.items():
        p50 = {what: percentile(t[what], 50) for what in TARGETS}
        lines.append(
            f"| {side} | {len(t['reset'])} | {p50['reset']:.0f} | {percentile(t['reset'], 95):.0f} | "
            f"{len(t['step'])} | {p50['step']:.0f} | {percentile(t['step'], 95):.0f} | "
            f"{p50['reset'] / mine['reset']:.1f}x | {p50['step'] / mine['step']:.1f}x |"
        )
    default = {what: percentile(times["BrowserGym default"][what], 50) for what in TARGETS}
    met = {what: default[what] / mine[what] >= TARGETS[what] for what in TARGETS}
    lines += [""] + [
        f"- target, {what} >= {TARGETS[what]:g}x faster than BrowserGym's default (p50): "
        f"{default[what] / mine[what]:.1f}x, " + ("met" if met[what] else "**missed**")
        for what in TARGETS
    ]
    lines += ["", f"Command: `PYTHONPATH=services .venv/bin/python bench/browsergym_env.py --out`; {machine()}"]
    report("\n".join(lines), args.out)
    return 0 if all(met.values()) and not differ else 1


if __name__ == "__main__":
    sys.exit(main())
