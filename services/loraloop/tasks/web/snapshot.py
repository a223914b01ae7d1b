"""Snapshot REAL's task registry from the installed `agisdk` package into one self-contained JSON file.

The seed pins its rollouts and evals to such a snapshot so that an SDK update cannot change the
tasks under a running experiment; the eval scripts travel inside the file, so it works offline.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

from loraloop.errors import ConfigError, TaskFormatError
from loraloop.tasks.base import Registry, snapshot_document, write_document
from loraloop.tasks.web.format import parse_web_task

SOURCES = ("real",)


def agisdk_versions_dir() -> Path:
    """The folder of agisdk's web-clone task versions (v1, v2, ...); a clear error without agisdk."""
    try:
        from agisdk.REAL.browsergym import webclones
    except ImportError as exc:
        raise ConfigError("the snapshot needs the agisdk package: pip install 'loraloop[real]'") from exc
    return Path(webclones.__file__).parent


def snapshot(source: str, version: str) -> dict:
    """The registry document: every task of that version, validated, with the eval scripts they name."""
    if source not in SOURCES:
        raise ConfigError(f"--source must be one of {SOURCES}, got {source!r}")
    root = agisdk_versions_dir()
    tasks_dir = root / version / "tasks"
    if not tasks_dir.is_dir():
        known = sorted(p.name for p in root.iterdir() if (p / "tasks").is_dir())
        raise ConfigError(f"agisdk has no task version {version!r} (known: {', '.join(known)})")
    tasks, scripts = [], {}
    for path in sorted(
        tasks_dir.glob("*.json"), key=lambda p: (p.stem.rsplit("-", 1)[0], int(p.stem.rsplit("-", 1)[-1] or 0))
    ):
        raw = json.loads(path.read_text(encoding="utf-8"))
        raw.setdefault("version", version)
        for ev in raw.get("evals", []):
            if ev.get("script"):
                scripts[ev["script"]] = (root / version / "eval_scripts" / ev["script"]).read_text(encoding="utf-8")
        tasks.append(raw)
    doc = {
        "source": source,
        "version": version,
        "agisdk_version": metadata.version("agisdk"),
        "tasks": tasks,
        "eval_scripts": scripts,
    }
    for i, raw in enumerate(tasks):  # validate now: a snapshot that loads later is the point
        parse_web_task(raw, file=f"agisdk {version}", number=i, scripts=scripts)
    return doc


def write_snapshot(source: str, version: str, out: Path) -> dict:
    """Write the snapshot to `out` (atomically) and return it."""
    doc = snapshot(source, version)
    write_document(doc, out)
    return doc


def snapshot_registry(path: Path) -> Registry | None:
    """A snapshot file written by `loraloop tasks snapshot` as a registry; None for any other path."""
    doc = snapshot_document(path, SOURCES, unnamed=SOURCES[0])
    if doc is None:
        return None
    if not isinstance(doc["tasks"], list) or not isinstance(doc.get("eval_scripts", {}), dict):
        raise TaskFormatError(f"{path}: field 'tasks' must be a list and 'eval_scripts' an object")
    name = f"{doc.get('source', 'real')}-{doc.get('version', '')}".rstrip("-")
    return Registry(
        name=name,
        env="web",
        tasks=[
            parse_web_task(
                raw, file=str(path), number=i, split=str(doc.get("split", "")), scripts=doc.get("eval_scripts", {})
            )
            for i, raw in enumerate(doc["tasks"])
        ],
    )
