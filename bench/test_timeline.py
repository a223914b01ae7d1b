"""Where the workers of `make test` spent the suite: each worker's busy time and idle tail, and the longest test
files with the worker that ran them and when they started (issue #25: the suite within 20 minutes).

    LORALOOP_TEST_TIMELINE=/tmp/timeline.jsonl make test      # tests/conftest.py writes a line per test phase
    .venv/bin/python bench/test_timeline.py /tmp/timeline.jsonl [--files 20] [--out]

The parallel phase ends when its last worker does, so a worker that starts a long file late keeps the others idle;
tests/conftest.py's LONGEST_FIRST is the order the long files are handed out in, and this table is how to check it.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

from results import add_out, machine, report


def load(path: Path) -> list[dict]:
    """The timeline's lines (worker, test, phase, start, stop, outcome), in the order they were written."""
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def summarise(lines: list[dict], files: int) -> str:
    """The Markdown: per worker (first start, last stop, busy and idle seconds), then the longest files."""
    if not lines:
        raise SystemExit("the timeline is empty: run the suite with LORALOOP_TEST_TIMELINE=<file>")
    by_worker: dict[str, list[dict]] = defaultdict(list)
    by_file: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for line in lines:
        by_worker[line["worker"]].append(line)
        by_file[(line["worker"], line["test"].split("::")[0])].append(line)
    out = [f"# Test suite timeline\n\n{machine()}\n", "| worker | start | end | busy s | idle before the end s |"]
    out.append("|---|---|---|---|---|")
    parallel = [w for w in by_worker if w != "main"]
    origin = min(line["start"] for line in lines)
    end = max(line["stop"] for w in parallel for line in by_worker[w]) if parallel else 0.0
    for worker in sorted(by_worker):
        spans = by_worker[worker]
        first, last = min(s["start"] for s in spans), max(s["stop"] for s in spans)
        busy = sum(s["stop"] - s["start"] for s in spans)
        idle = f"{end - last:.0f}" if worker != "main" else "-"
        out.append(f"| {worker} | {first - origin:.0f} | {last - origin:.0f} | {busy:.0f} | {idle} |")
    out += ["", f"The {files} longest files (seconds from the first test's start):", ""]
    out += ["| file | worker | start | end | seconds | CPU s |", "|---|---|---|---|---|---|"]
    spans = [
        (
            path,
            worker,
            min(s["start"] for s in rows),
            max(s["stop"] for s in rows),
            sum(s["stop"] - s["start"] for s in rows),
            cpu_of(rows),
        )
        for (worker, path), rows in by_file.items()
    ]
    for path, worker, first, last, busy, cpu in sorted(spans, key=lambda s: -s[4])[:files]:
        shown = "-" if cpu is None else f"{cpu:.0f}"
        out.append(f"| {path} | {worker} | {first - origin:.0f} | {last - origin:.0f} | {busy:.0f} | {shown} |")
    measured = [s for s in spans if s[5] is not None]
    if measured:  # the suite is CPU-bound: what costs the CPU is what to cut
        out += ["", f"The {files} files that used the most CPU (their process trees; containers not counted):", ""]
        out += ["| file | CPU s | seconds |", "|---|---|---|"]
        for path, _, _, _, busy, cpu in sorted(measured, key=lambda s: -s[5])[:files]:
            out.append(f"| {path} | {cpu:.0f} | {busy:.0f} |")
        out.append(f"\nCPU of every test's process tree, summed: {sum(s[5] for s in measured):.0f} s")
    return "\n".join(out) + "\n"


def cpu_of(rows: list[dict]) -> float | None:
    """The CPU seconds of a file's test phases (tests/conftest.py's `cpu`), or None in a timeline without them."""
    if any("cpu" not in r for r in rows):
        return None
    return sum(r["cpu"] for r in rows)


def main() -> None:
    """Read the timeline file and print (and with --out write) its tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("timeline", type=Path)
    parser.add_argument("--files", type=int, default=20)
    add_out(parser, "test_timeline")
    args = parser.parse_args()
    report(summarise(load(args.timeline), args.files), args.out)


if __name__ == "__main__":
    main()
