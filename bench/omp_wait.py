"""Torch on a shared CPU: OpenMP's default (spinning) wait policy against OMP_WAIT_POLICY=PASSIVE.

    .venv/bin/python bench/omp_wait.py [--passes 3] [--tokens 512] [--rounds 2] [--out]

The work: `--passes` forward+backward passes of SmolLM2-135M-Instruct (volumes/models) on `--tokens` tokens, on
torch's 2 threads, in a process of its own. It runs alone (the machine idle) and beside a neighbour (another
2-thread torch process doing the same work in a loop, as a second worker's training run, vLLM or Chromium take the
cores in the test suite), once with libgomp's default policy (threads spin after each parallel region) and once
passive, `--rounds` times each in turn. Prints each case's median wall and CPU seconds and the passive/default
ratio measured in the same run. Why: scripts/test.sh runs the suite passive (docs/testing.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

from results import add_out, machine, report

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "volumes/models/SmolLM2-135M-Instruct"
WORK = """
import resource, sys, time, torch
from transformers import AutoModelForCausalLM
torch.set_num_threads(2)
model = AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype=torch.float32)
ids = torch.randint(0, 1000, (1, int(sys.argv[2])))
model(ids, labels=ids).loss.backward()  # warm
loop = sys.argv[3] == "loop"
while True:
    usage, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    for _ in range(int(sys.argv[4])):
        model(ids, labels=ids).loss.backward()
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
    if not loop:
        print(f"{time.perf_counter() - started:.2f} {cpu:.2f}")
        break
"""


def run(policy: str | None, tokens: int, passes: int) -> tuple[float, float]:
    """(wall, cpu) seconds of the work in a process of its own under `policy` (None: libgomp's default)."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if policy:
        env["OMP_WAIT_POLICY"] = policy
    out = subprocess.run(
        [sys.executable, "-c", WORK, str(MODEL), str(tokens), "once", str(passes)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return float(out[-2]), float(out[-1])


def main() -> int:
    """Measure the four cases and print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=2)
    add_out(parser, "omp_wait")
    args = parser.parse_args()
    cases: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for beside in ("alone", "beside a neighbour"):
        neighbour = None
        if beside != "alone":  # the neighbour keeps the default policy: it is the other work on the machine
            neighbour = subprocess.Popen(
                [sys.executable, "-c", WORK, str(MODEL), str(args.tokens), "loop", "1"], stdout=subprocess.DEVNULL
            )
        try:
            for _ in range(args.rounds):
                for policy in ("default", "PASSIVE"):
                    got = run(None if policy == "default" else policy, args.tokens, args.passes)
                    cases.setdefault((beside, policy), []).append(got)
        finally:
            if neighbour:
                neighbour.kill()
                neighbour.wait()
    lines = [
        "# OpenMP wait policy: torch on a shared CPU",
        "",
        machine(),
        "",
        f"Command: `.venv/bin/python bench/omp_wait.py --passes {args.passes} --tokens {args.tokens} "
        f"--rounds {args.rounds}`. {args.passes} forward+backward passes of SmolLM2-135M on {args.tokens} tokens, "
        f"torch on 2 threads; medians of {args.rounds} runs each.",
        "",
        "| machine | policy | wall s | CPU s | passive / default (wall) |",
        "|---|---|---:|---:|---:|",
    ]
    for beside in ("alone", "beside a neighbour"):
        walls = {p: statistics.median(w for w, _ in cases[(beside, p)]) for p in ("default", "PASSIVE")}
        for policy in ("default", "PASSIVE"):
            cpu = statistics.median(c for _, c in cases[(beside, policy)])
            ratio = f"{walls['PASSIVE'] / walls['default']:.2f}" if policy == "PASSIVE" else ""
            lines.append(f"| {beside} | {policy} | {walls[policy]:.1f} | {cpu:.1f} | {ratio} |")
    report("\n".join(lines) + "\n", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
