"""Export stored trajectories as TRL datasets: bc.jsonl, dpo.jsonl, grpo.jsonl, and a manifest.

Reads any store (file:// or s3://) one task at a time, writes each file whole (temp file, then
rename), skips and counts malformed episodes with their key and line, and records the source runs,
counts and a digest per file in manifest.json.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import orjson

from loraloop.datasets.bc import bc_rows
from loraloop.datasets.dpo import dpo_rows
from loraloop.datasets.grpo import grpo_rows
from loraloop.datasets.states import episodes_by_task, states
from loraloop.errors import ConfigError
from loraloop.store.backends import Store

BUILDERS = {"bc": bc_rows, "dpo": dpo_rows, "grpo": grpo_rows}
PAIRINGS = ("default", "progress_ranked")


def export(
    store: Store,
    prefix: str,
    output_dir: Path,
    formats: list[str],
    *,
    char_budget: int = 4000,
    pairing: str = "default",
    top_percent: float = 0.2,
) -> dict:
    """Write one dataset per format from the episodes under `prefix`; return the manifest."""
    unknown = [f for f in formats if f not in BUILDERS]
    if unknown:
        raise ConfigError(f"--format {', '.join(unknown)} is not one of {', '.join([*BUILDERS, 'all'])}")
    if pairing not in PAIRINGS:
        raise ConfigError(f"--pairing_strategy {pairing!r} is not one of {', '.join(PAIRINGS)}")
    if not 0.0 < top_percent <= 1.0:
        raise ConfigError(f"--top_percent must be in (0, 1], got {top_percent}")
    output_dir.mkdir(parents=True, exist_ok=True)
    malformed: list[str] = []
    counts = {"episodes": 0, "successful_episodes": 0, "tasks": 0, "steps": 0}
    rows = {f: 0 for f in formats}
    digests = {f: hashlib.sha256() for f in formats}
    runs: set[str] = set()
    handles = {f: (output_dir / f"{f}.jsonl.part").open("wb") for f in formats}
    try:
        for task_id, episodes in episodes_by_task(store, prefix, malformed):
            counts["tasks"] += 1
            counts["episodes"] += len(episodes)
            counts["successful_episodes"] += sum(e.success for e in episodes)
            counts["steps"] += sum(len(e.steps) for e in episodes)
            runs.update(f"{e.start.mode}/{e.start.run_id}" for e in episodes)
            states_of = {e.key: states(e, char_budget) for e in episodes}
            for fmt in formats:
                for row in BUILDERS[fmt](task_id, episodes, states_of, pairing=pairing, top_percent=top_percent):
                    line = orjson.dumps(row) + b"\n"
                    handles[fmt].write(line)
                    digests[fmt].update(line)
                    rows[fmt] += 1
    except BaseException:
        for fmt, handle in handles.items():
            handle.close()
            (output_dir / f"{fmt}.jsonl.part").unlink(missing_ok=True)
        raise
    for handle in handles.values():
        handle.close()
    for fmt in formats:
        (output_dir / f"{fmt}.jsonl.part").replace(output_dir / f"{fmt}.jsonl")
    manifest = {
        "formats": formats,
        "source": f"{store.url}/{prefix}",
        "runs": sorted(runs),
        **counts,
        "rows": rows,
        "pairing_strategy": pairing,
        "top_percent": top_percent,
        "malformed": malformed,
        "files": {f"{f}.jsonl": digests[f].hexdigest() for f in formats},
    }
    (output_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return manifest
