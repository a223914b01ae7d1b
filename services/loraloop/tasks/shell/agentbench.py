"""AgentBench's OS-interaction data as published: find its sets, load them in place, or import them.

AgentBench (configs/tasks/os.yaml) names two task sets over `data/os_interaction/`:

- os-dev: `data/dev.json`, scripts in `scripts/dev/`, index prefix `dev-001-`;
- os-std: `data/N/*.json` for N = 1…7, scripts in `scripts/N/`, index prefix `std-00N-`.

Its loader (src/server/tasks/os_interaction/task.py) keeps the `.json`/`.jsonl` files a set's
glob matches, and names task i of file STEM.json `index_prefix + STEM + "-%05d" % i`
(`dev-001-dev-00000`, `std-001-stock-00003`); script `file`s are relative to the set's scripts
folder. Here each set becomes one split: `dev`, `std-001`, `std-002`, …
"""
from __future__ import annotations

import json
import shutil
from dataclasses import asdict
from pathlib import Path

from loraloop.errors import TaskFormatError
from loraloop.tasks.base import REGISTRY_FILE, Registry, TaskSet, load_sets
from loraloop.tasks.shell.format import missing_scripts

FORMAT = "agentbench-os"
DEV_FILE = "dev.json"


def _numbered(data: Path) -> list[Path]:
    """The numbered set folders (`1`, `2`, …) that hold task files, in numeric order."""
    dirs = [d for d in data.iterdir() if d.is_dir() and d.name.isdigit() and any(d.glob("*.json"))]
    return sorted(dirs, key=lambda d: int(d.name))


def agentbench_sets(data: Path, scripts: Path, root: Path | None = None) -> list[TaskSet]:
    """AgentBench's os-dev and os-std sets found in `data`, with paths relative to `root`
    (absolute when `root` is None)."""
    def rel(path: Path) -> str:
        return path.relative_to(root).as_posix() if root is not None else str(path)

    sets = []
    if (data / DEV_FILE).is_file():
        sets.append(TaskSet(split="dev", files=rel(data / DEV_FILE), scripts=rel(scripts / "dev"),
                            index_prefix="dev-001-"))
    for folder in _numbered(data):
        number = int(folder.name)
        sets.append(TaskSet(split=f"std-{number:03d}", files=rel(folder) + "/*.json",
                            scripts=rel(scripts / folder.name), index_prefix=f"std-{number:03d}-"))
    return sets


def find_layout(path: Path) -> tuple[Path, Path] | None:
    """(data folder, scripts folder) when `path` is an AgentBench os_interaction folder (holding
    data/ and scripts/) or its data folder (scripts/ beside it); None otherwise."""
    path = Path(path)
    if not path.is_dir():
        return None
    for data, scripts in ((path / "data", path / "scripts"), (path, path.parent / "scripts")):
        if data.is_dir() and scripts.is_dir() and ((data / DEV_FILE).is_file() or _numbered(data)):
            return data, scripts
    return None


def agentbench_registry(path: Path) -> Registry | None:
    """Load an AgentBench os_interaction folder (or its data folder) in place; None if it is not one."""
    layout = find_layout(path)
    if layout is None:
        return None
    data, scripts = layout
    name = (data.parent if data != Path(path) or data.name == "data" else data).resolve().name
    return load_sets(name, data.parent, agentbench_sets(data, scripts, data.parent), env="shell")


def _registry_yaml(name: str, sets: list[TaskSet], source: tuple[Path, Path]) -> str:
    lines = [
        f"# AgentBench OS-interaction tasks, imported by `loraloop tasks import {FORMAT}`",
        f"# from {source[0]} (tasks) and {source[1]} (scripts).",
        "# As in AgentBench's configs/tasks/os.yaml: task i of file STEM.json in a set is",
        "# index_prefix + STEM + \"-%05d\" % i, and script files are relative to the set's `scripts`.",
        f"name: {json.dumps(name)}",
        "env: shell",
        "sets:",
    ]
    for spec in sets:
        fields = {k: v for k, v in asdict(spec).items() if k != "stem_in_index"}
        lines.append(f"  - split: {json.dumps(fields.pop('split'))}")
        lines += [f"    {key}: {json.dumps(value)}" for key, value in fields.items()]
    return "\n".join(lines) + "\n"


def _validate(registry: Registry) -> None:
    missing = [f"{t.index}: missing script {m}" for t in registry.tasks for m in missing_scripts(t)]
    if missing:
        raise TaskFormatError("; ".join(missing))


def import_agentbench_os(data: Path, scripts: Path, out: Path, *, force: bool = False) -> Registry:
    """Copy AgentBench's task files and scripts into `out` (data/…, scripts/…, registry.yaml), as a
    self-contained registry, and return it loaded from there. Nothing is written unless the source
    loads and every script it names exists."""
    data, scripts, out = Path(data), Path(scripts), Path(out)
    if not data.is_dir():
        raise TaskFormatError(f"--data {data}: not a folder (AgentBench's data/os_interaction/data)")
    if not scripts.is_dir():
        raise TaskFormatError(f"--scripts {scripts}: not a folder (AgentBench's data/os_interaction/scripts)")
    source_sets = agentbench_sets(data.absolute(), scripts.absolute())
    if not source_sets:
        raise TaskFormatError(f"--data {data}: neither {DEV_FILE} nor numbered set folders (1/, 2/, …) "
                              f"with .json task files")
    _validate(load_sets(out.name, Path("/"), source_sets, env="shell"))
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not force:
            raise TaskFormatError(f"--out {out} exists and is not empty (add --force to replace it)")
        shutil.rmtree(out) if out.is_dir() else out.unlink()
    (out / "data").mkdir(parents=True, exist_ok=True)
    (out / "scripts").mkdir(exist_ok=True)
    if (data / DEV_FILE).is_file():
        shutil.copy2(data / DEV_FILE, out / "data" / DEV_FILE)
        if (scripts / "dev").is_dir():
            shutil.copytree(scripts / "dev", out / "scripts" / "dev")
    for folder in _numbered(data):
        (out / "data" / folder.name).mkdir()
        for task_file in sorted(folder.glob("*.json")):
            shutil.copy2(task_file, out / "data" / folder.name / task_file.name)
        if (scripts / folder.name).is_dir():
            shutil.copytree(scripts / folder.name, out / "scripts" / folder.name)
    sets = agentbench_sets(out / "data", out / "scripts", out)
    (out / REGISTRY_FILE).write_text(_registry_yaml(out.name, sets, (data, scripts)))
    registry = load_sets(out.name, out, sets, env="shell")  # what registry.yaml now says
    _validate(registry)
    return registry
