"""Load and check a training dataset before any model is loaded."""

from __future__ import annotations

import json
from pathlib import Path

from loraloop.errors import ConfigError


def load_rows(path: str, required: tuple[str, ...]) -> list[dict]:
    """Read a JSONL dataset, failing with file and line when a row lacks a required field."""
    file = Path(path)
    if not file.is_file():
        raise ConfigError(f"dataset {file} does not exist")
    rows = []
    for number, line in enumerate(file.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{file}:{number}: not JSON ({exc.msg})") from exc
        missing = [k for k in required if k not in row]
        if missing:
            raise ConfigError(
                f"{file}:{number}: missing field(s) {', '.join(missing)} (expected {', '.join(required)})"
            )
        rows.append({k: row[k] for k in required})
    if not rows:
        raise ConfigError(f"dataset {file} is empty: nothing to train on")
    return rows
