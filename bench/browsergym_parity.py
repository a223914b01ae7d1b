"""Parity with BrowserGym on every compared MiniWoB++ type: the same seed and action sequence, played through the
browsergym kind and through BrowserGym's own `BrowserEnv`, must give the same goal and the same reward, end and raw
reward at every step (envs/browsergym/parity.py). The suite checks a sample of these types; this checks them all.

    PYTHONPATH=services .venv/bin/python bench/browsergym_parity.py --out  # bench/results/browsergym_parity.md

Exits 1 when a type does not match (a parity failure, not a speed figure).
"""

from __future__ import annotations

import argparse
import sys
import time

from results import add_out, machine, report

from loraloop.envs.browsergym.parity import SEED, SOLVED, WRONG, compare
from loraloop.settings import Settings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--types", nargs="*", default=[*SOLVED, *WRONG], help="task types (default: all compared)")
    add_out(parser, "browsergym_parity")
    args = parser.parse_args()
    settings = Settings()
    rows, matched, started = [], 0, time.monotonic()
    for task_type in args.types:
        began = time.monotonic()
        result = compare(task_type, settings, settings.chromium_path)
        expected = 1.0 if task_type in SOLVED else 0.0
        ok = result.matches and result.reward == expected
        matched += ok
        rows.append(
            f"| {task_type} | {'solver' if task_type in SOLVED else 'wrong'} | {len(result.ours)} | "
            f"{result.reward:g} | {'yes' if ok else 'NO'} | {time.monotonic() - began:.1f} |"
        )
        print(rows[-1], flush=True)
    markdown = "\n".join(
        [
            "# Parity with BrowserGym's own MiniWoB++ env",
            "",
            f"Seed {SEED} (the first held-out seed), the same actions on the same elements on both sides; "
            f"**{matched}/{len(rows)} types match** step by step; {time.monotonic() - started:.0f} s in all.",
            "",
            "| type | sequence | steps | reward | same goal and outcomes, expected reward | seconds |",
            "|---|---|---|---|---|---|",
            *rows,
            "",
            "Command: `PYTHONPATH=services .venv/bin/python bench/browsergym_parity.py --out`; " + machine(),
        ]
    )
    report(markdown, args.out)
    return 0 if matched == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
