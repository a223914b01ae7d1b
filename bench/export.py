"""Export benchmark: steps per second of `loraloop export --format all` against a plain JSON-lines read.

    .venv/bin/python bench/export.py [--episodes 1500] [--steps 6] [--out]

Writes a synthetic store (file://, in a temporary folder) of episodes shaped like real ones: a
long system prompt, one-shot examples, several tasks with successful and failed attempts. Then,
in the same run: the baseline reads every episode file and parses every line with json.loads;
the export builds bc.jsonl, dpo.jsonl and grpo.jsonl from the same files. Target (issue #6):
export steps/s >= 0.5 x baseline steps/s. Exits 1 when missed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from results import add_out, report

from loraloop.datasets.export import export
from loraloop.envs.shell.protocol import INSTRUCTIONS, ONE_SHOT
from loraloop.store.backends import FileStore
from loraloop.store.records import EpisodeEnd, EpisodeStart, Step
from loraloop.store.trajectories import EpisodeRecorder


def make_store(root: Path, episodes: int, steps: int) -> FileStore:
    """A store of synthetic episodes: 20 tasks, attempts alternating success and failure."""
    store = FileStore(root)
    for n in range(episodes):
        task, attempt = f"bench-{n % 20:05d}", n // 20
        success = attempt % 2 == 0
        rec = EpisodeRecorder(store, "bench", "run", task, attempt)
        rec.add(
            EpisodeStart(
                task_id=task,
                mode="bench",
                run_id="run",
                category="files",
                system_prompt=INSTRUCTIONS,
                examples=ONE_SHOT,
                first_observation=f"Task: count the files in /root/{task}",
            )
        )
        for i in range(steps):
            command = f"ls /root/{task} | wc -l" if success or i < 2 else f"find /root -name '*{i}*'"
            rec.add(
                Step(
                    step_idx=i,
                    observation=f"The output of the OS:\n\n{'x' * 200}{i}",
                    raw_output=f"Think: step {i}.\n\nAct: bash\n\n```bash\n{command}\n```",
                    last_action_error="format" if (not success and i == 3) else None,
                    action_source="worker",
                )
            )
        rec.add(EpisodeEnd(success=success, reward=1.0 if success else 0.0, total_steps=steps))
        rec.flush()
    return store


def baseline(root: Path) -> int:
    """Read every episode file and parse every line: the floor any export must pay. Returns steps."""
    steps = 0
    for path in sorted(root.rglob("*.jsonl")):
        with path.open() as handle:
            for line in handle:
                steps += json.loads(line)["type"] == "step"
    return steps


def main() -> int:
    """Time both, print the table and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=1500)
    parser.add_argument("--steps", type=int, default=6)
    add_out(parser, "export")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = make_store(Path(tmp) / "store", args.episodes, args.steps)
        started = time.perf_counter()
        steps = baseline(Path(tmp) / "store")
        base_s = time.perf_counter() - started
        started = time.perf_counter()
        manifest = export(store, "trajectories", Path(tmp) / "ds", ["bc", "dpo", "grpo"])
        export_s = time.perf_counter() - started
    assert manifest["steps"] == steps, (manifest["steps"], steps)
    ratio = (steps / export_s) / (steps / base_s)
    lines = [
        "| path | steps | seconds | steps/s |",
        "|---|---:|---:|---:|",
        f"| plain JSON-lines read | {steps} | {base_s:.2f} | {steps / base_s:.0f} |",
        f"| export bc+dpo+grpo | {steps} | {export_s:.2f} | {steps / export_s:.0f} |",
        "",
        f"- rows: {manifest['rows']}",
        f"- export steps/s / plain read steps/s: {ratio:.2f} (target >= 0.5)",
    ]
    report("\n".join(lines), args.out)
    return 0 if ratio >= 0.5 else 1


if __name__ == "__main__":
    sys.exit(main())
