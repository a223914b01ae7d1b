"""AgentBench's OS-interaction data as published: find its sets, load them in place, or import them.

AgentBench (configs/tasks/os.yaml) names two task sets over `data/os_interaction/`:

- os-dev: `data/dev.json`, scripts in `scripts/dev/`, index prefix `dev-001-`;
- os-std: `data/N/*.json` for N = 1…7, scripts in `scripts/N/`, index prefix `std-00N-`.

Its loader (src/server/tasks/os_interaction/task.py) keeps the `.json`/`.jsonl` files a set's
glob matches, and names task i of file STEM.json `index_prefix + STEM + "-%05d" % i`
(`dev-001-dev-00000`, `std-001-stock-00003`); script `file`s are relative to the set's scripts
folder. Here each set becomes one split: `dev`, `std-001`, `std-002`, …

AgentBench's main branch also publishes a training set, `train_0317/training.json` (1,000 tasks)
beside `data/`, that no config names: its tasks name check scripts (`check/integer-match.py`, …)
that live in `scripts/7/`. It becomes split `train`, index prefix `train-0317-` (from the folder
name; `train-` for a copy of the set kept outside a `train_*` folder, e.g. training.json with
scripts/7/ beside it).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from loraloop.errors import TaskFormatError
from loraloop.tasks.base import REGISTRY_FILE, Registry, TaskSet, load_sets
from loraloop.tasks.shell.format import ShellTask, missing_scripts, parse_task

FORMAT = "agentbench-os"
DEV_FILE = "dev.json"
TRAIN_FILE = "training.json"
TRAIN_SCRIPTS = "7"  # the scripts folder the training tasks' check files are found in


@dataclass(frozen=True)
class Layout:
    """Where a published os_interaction folder keeps its sets: `data` (dev.json, N/; None when it has
    neither), `scripts`, and the folders holding a training set (`train_0317/`, or a copy's own)."""

    root: Path
    data: Path | None
    scripts: Path
    train: tuple[Path, ...] = ()


def _numbered(data: Path) -> list[Path]:
    """The numbered set folders (`1`, `2`, …) that hold task files, in numeric order."""
    dirs = [d for d in data.iterdir() if d.is_dir() and d.name.isdigit() and any(d.glob("*.json"))]
    return sorted(dirs, key=lambda d: int(d.name))


def _has_sets(data: Path) -> bool:
    return data.is_dir() and ((data / DEV_FILE).is_file() or bool(_numbered(data)))


def _train_folders(root: Path) -> list[Path]:
    """`root` itself when it holds training.json (a copy of the set, or its train_*/ folder), else
    the `train_*/` folders in it that hold task files."""
    if (root / TRAIN_FILE).is_file():
        return [root]
    return sorted(d for d in root.glob("train_*") if d.is_dir() and any(d.glob("*.json")))


def _train_prefix(folder: Path) -> str:
    """`train_0317` -> `train-0317-`; any other folder name -> `train-`."""
    tag = folder.name.removeprefix("train_") if folder.name.startswith("train_") else ""
    return f"train-{tag}-" if tag else "train-"


def agentbench_sets(layout: Layout, root: Path | None = None) -> list[TaskSet]:
    """The os-dev, os-std and training sets of a layout, with paths relative to `root` (absolute
    when `root` is None)."""

    def rel(path: Path) -> str:
        return path.relative_to(root).as_posix() if root is not None else str(path)

    sets = []
    data, scripts = layout.data, layout.scripts
    if data is not None and (data / DEV_FILE).is_file():
        sets.append(
            TaskSet(split="dev", files=rel(data / DEV_FILE), scripts=rel(scripts / "dev"), index_prefix="dev-001-")
        )
    for folder in _numbered(data) if data is not None else []:
        number = int(folder.name)
        sets.append(
            TaskSet(
                split=f"std-{number:03d}",
                files=rel(folder) + "/*.json",
                scripts=rel(scripts / folder.name),
                index_prefix=f"std-{number:03d}-",
            )
        )
    for folder in layout.train:
        files = "*.json" if folder == root else rel(folder) + "/*.json"
        sets.append(
            TaskSet(
                split="train", files=files, scripts=rel(scripts / TRAIN_SCRIPTS), index_prefix=_train_prefix(folder)
            )
        )
    return sets


def find_layout(path: Path) -> Layout | None:
    """The layout when `path` is an AgentBench os_interaction folder (data/, scripts/, train_*/), its
    data/ or train_*/ folder (scripts/ beside it), or a copy of the training set (training.json with
    scripts/ beside it); None otherwise."""
    path = Path(path)
    if not path.is_dir():
        return None
    if (path / "scripts").is_dir():
        root, data = path, path / "data"
    elif (path.parent / "scripts").is_dir() and path.name != "scripts":
        root, data = path.parent, path
    else:
        return None
    train = tuple(_train_folders(root))
    if not _has_sets(data) and not train:
        return None
    return Layout(root=root, data=data if _has_sets(data) else None, scripts=root / "scripts", train=train)


def agentbench_registry(path: Path) -> Registry | None:
    """Load an AgentBench os_interaction folder (or its data folder, or a training set) in place;
    None if it is not one."""
    layout = find_layout(path)
    if layout is None:
        return None
    return load_sets(
        layout.root.resolve().name, layout.root, agentbench_sets(layout, layout.root), parse_task, env="shell"
    )


def _registry_yaml(name: str, sets: list[TaskSet], source: tuple[Path, Path]) -> str:
    lines = [
        f"# AgentBench OS-interaction tasks, imported by `loraloop tasks import {FORMAT}`",
        f"# from {source[0]} (tasks) and {source[1]} (scripts).",
        "# As in AgentBench's configs/tasks/os.yaml: task i of file STEM.json in a set is",
        '# index_prefix + STEM + "-%05d" % i, and script files are relative to the set\'s `scripts`.',
        f"name: {json.dumps(name)}",
        "env: shell",
        "sets:",
    ]
    for spec in sets:
        fields = {k: v for k, v in asdict(spec).items() if k != "stem_in_index" and (k != "ids" or v is not None)}
        lines.append(f"  - split: {json.dumps(fields.pop('split'))}")
        lines += [f"    {key}: {json.dumps(value)}" for key, value in fields.items()]
    return "\n".join(lines) + "\n"


def _validate(registry: Registry) -> None:
    shell = [t for t in registry.tasks if isinstance(t, ShellTask)]  # AgentBench's sets hold only shell tasks
    missing = [f"{t.index}: missing script {m}" for t in shell for m in missing_scripts(t)]
    if missing:
        raise TaskFormatError("; ".join(missing))


def _source_layout(data: Path, scripts: Path) -> Layout:
    """The sets under --data and --scripts: dev.json and N/ in `data`, and the training set in
    `data` itself (a copy of it) or in train_*/ beside a `data` that holds sets (AgentBench's checkout)."""
    train = _train_folders(data) or (_train_folders(data.parent) if _has_sets(data) else [])
    return Layout(root=data.parent, data=data if _has_sets(data) else None, scripts=scripts, train=tuple(train))


def _train_dest(folder: Path) -> str:
    """The folder a training set is copied to: its own name when it is AgentBench's train_*/, else `train`."""
    return folder.name if folder.name.startswith("train_") else "train"


def import_agentbench_os(data: Path, scripts: Path, out: Path, *, force: bool = False) -> Registry:
    """Copy AgentBench's task files and scripts into `out` (data/…, train_*/…, scripts/…,
    registry.yaml), as a self-contained registry, and return it loaded from there. Nothing is
    written unless the source loads and every script it names exists."""
    data, scripts, out = Path(data), Path(scripts), Path(out)
    if not data.is_dir():
        raise TaskFormatError(f"--data {data}: not a folder (AgentBench's data/os_interaction/data)")
    if not scripts.is_dir():
        raise TaskFormatError(f"--scripts {scripts}: not a folder (AgentBench's data/os_interaction/scripts)")
    source = _source_layout(data.absolute(), scripts.absolute())
    source_sets = agentbench_sets(source)
    if not source_sets:
        raise TaskFormatError(
            f"--data {data}: neither {DEV_FILE}, numbered set folders (1/, 2/, …) with .json "
            f"task files, nor a training set ({TRAIN_FILE} in it or in train_*/ beside it)"
        )
    _validate(load_sets(out.name, Path("/"), source_sets, parse_task, env="shell"))
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not force:
            raise TaskFormatError(f"--out {out} exists and is not empty (add --force to replace it)")
        shutil.rmtree(out) if out.is_dir() else out.unlink()
    (out / "scripts").mkdir(parents=True)
    wanted = []  # (task files, destination folder, scripts subfolder)
    if source.data is not None and (data / DEV_FILE).is_file():
        wanted.append(([data / DEV_FILE], out / "data", "dev"))
    for folder in _numbered(data) if source.data is not None else []:
        wanted.append((sorted(folder.glob("*.json")), out / "data" / folder.name, folder.name))
    for folder in source.train:
        wanted.append((sorted(folder.glob("*.json")), out / _train_dest(folder), TRAIN_SCRIPTS))
    for task_files, dest, scripts_name in wanted:
        dest.mkdir(parents=True, exist_ok=True)
        for task_file in task_files:
            shutil.copy2(task_file, dest / task_file.name)
        if (scripts / scripts_name).is_dir() and not (out / "scripts" / scripts_name).exists():
            shutil.copytree(scripts / scripts_name, out / "scripts" / scripts_name)
    layout = Layout(
        root=out,
        data=out / "data" if _has_sets(out / "data") else None,
        scripts=out / "scripts",
        train=tuple(out / _train_dest(folder) for folder in source.train),
    )
    sets = agentbench_sets(layout, out)
    (out / REGISTRY_FILE).write_text(_registry_yaml(out.name, sets, (data, scripts)))
    registry = load_sets(out.name, out, sets, parse_task, env="shell")  # what registry.yaml now says
    _validate(registry)
    return registry
