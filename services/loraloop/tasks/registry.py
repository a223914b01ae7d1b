"""Task registries: load task files and folders, name tasks, and select subsets reproducibly."""
from __future__ import annotations

import glob
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from loraloop.errors import TaskFormatError
from loraloop.tasks.real_format import WebTask, is_web_task, parse_web_task
from loraloop.tasks.shell_format import ShellTask, parse_shell_task

Task = ShellTask | WebTask

REGISTRY_FILE = "registry.yaml"


TASK_SUFFIXES = (".json", ".jsonl")  # what AgentBench keeps of a set's glob


@dataclass(frozen=True)
class TaskSet:
    """A group of task files sharing a split, a scripts folder and an index prefix.

    A task's index is AgentBench's: index_prefix + file stem + "-%05d" % i (`dev-001-dev-00000`);
    `stem_in_index=False` drops the stem (used for a single task file given on its own).
    """

    split: str
    files: str
    scripts: str | None = None
    index_prefix: str = ""
    stem_in_index: bool = True


@dataclass
class Registry:
    """An ordered set of tasks addressable by index."""

    name: str
    env: str
    tasks: list[Task] = field(default_factory=list)

    def get(self, index: str) -> Task:
        """Return the task with this index, or fail naming it.

        AgentBench names task i of dev.json `dev-001-dev-00000`, while AReaL's examples and datasets
        write `dev-001-00000`; the short form (the file stem left out) is accepted when it names
        exactly one task.
        """
        for task in self.tasks:
            if task.index == index:
                return task
        short = [t for t in self.tasks if _without_stem(t) == index]
        if len(short) == 1:
            return short[0]
        raise TaskFormatError(f"registry {self.name}: no task with index {index!r}")

    def subsets(self) -> list[str]:
        """Names that --subset accepts: splits and their prefixes (`std` for std-001…), categories
        (file stems) and labels."""
        names = {t.split for t in self.tasks} | {t.category for t in self.tasks}
        names |= {t.split.rsplit("-", 1)[0] for t in self.tasks if "-" in t.split}
        names |= {label for t in self.tasks for label in t.labels}
        return sorted(n for n in names if n)

    def select(self, subset: str | None = None, sample_size: int | None = None, seed: int = 0) -> list[Task]:
        """Tasks in `subset`, then a seeded sample of `sample_size`.

        A subset is one term or several joined by `+` (a task must match every one). A term matches
        a task's split, category (file stem) or label, or is a prefix of its split up to a dash:
        `std` selects splits std-001 … std-007 (AgentBench's os-std), `std-001` only that one.
        """
        tasks = self.tasks
        if subset:  # "train+family:count-ext": every term must match
            terms = [term for term in subset.split("+") if term]
            tasks = [t for t in tasks if all(_matches(t, term) for term in terms)]
            if not tasks:
                raise TaskFormatError(
                    f"registry {self.name}: subset {subset!r} matches no task (known: {', '.join(self.subsets())})"
                )
        if sample_size is not None and sample_size < len(tasks):
            if sample_size < 1:
                raise TaskFormatError(f"--sample_size must be at least 1, got {sample_size}")
            chosen = set(random.Random(seed).sample(range(len(tasks)), sample_size))
            tasks = [t for i, t in enumerate(tasks) if i in chosen]
        return list(tasks)


def _matches(task: Task, term: str) -> bool:
    """One --subset term: the task's split or a dash-ended prefix of it, its category, or a label."""
    return term in (task.split, task.category) or task.split.startswith(f"{term}-") or term in task.labels


def _without_stem(task: Task) -> str | None:
    """`dev-001-dev-00000` -> `dev-001-00000`: the index with its file stem left out; a REAL task's bare id."""
    if isinstance(task, WebTask):
        return task.id
    tail = f"{task.category}-{task.index[-5:]}"
    if not task.category or not task.index.endswith(tail):
        return None
    return task.index[: -len(tail)] + task.index[-5:]


def _read_json(path: Path) -> list:
    """A task file: a JSON list of tasks or one task object; `.jsonl`: one task per line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskFormatError(f"{path}: cannot be read ({exc.strerror})") from exc
    if path.suffix == ".jsonl":
        tasks = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    tasks.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise TaskFormatError(f"{path}: not valid JSON (line {lineno}, column {exc.colno}: "
                                          f"{exc.msg})") from exc
        return tasks
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskFormatError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc
    return data if isinstance(data, list) else [data]


def _load_set(root: Path, spec: TaskSet) -> list[Task]:
    paths = sorted(Path(p) for p in glob.glob(str(root / spec.files)))
    if any(ch in spec.files for ch in "*?["):
        paths = [p for p in paths if p.name.endswith(TASK_SUFFIXES) and p.is_file()]
    if not paths:
        raise TaskFormatError(f"{root / spec.files}: no task file matches")
    scripts_dir = (root / spec.scripts) if spec.scripts else None
    tasks = []
    for path in paths:
        stem = path.name.removesuffix(".jsonl").removesuffix(".json")
        for i, raw in enumerate(_read_json(path)):
            if is_web_task(raw):
                tasks.append(parse_web_task(raw, file=str(path), number=i, split=spec.split, scripts_dir=scripts_dir))
                continue
            index = f"{spec.index_prefix}{stem}-{i:05d}" if spec.stem_in_index else f"{spec.index_prefix}{i:05d}"
            tasks.append(parse_shell_task(raw, file=str(path), number=i, index=index, split=spec.split,
                                          category=stem, scripts_dir=scripts_dir))
    return tasks


def load_sets(name: str, root: Path, sets: list[TaskSet], env: str = "shell") -> Registry:
    """A registry made of task sets whose paths are relative to `root` (or absolute)."""
    registry = Registry(name=name, env=env)
    for spec in sets:
        registry.tasks.extend(_load_set(Path(root), spec))
    _check_unique(registry)
    return registry


def _check_unique(registry: Registry) -> None:
    seen: dict[str, str] = {}
    for task in registry.tasks:
        if task.index in seen:
            raise TaskFormatError(f"duplicate task index {task.index!r} in {seen[task.index]} and {task.source}")
        seen[task.index] = task.source


def _registry_yaml(path: Path) -> Registry:
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise TaskFormatError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("sets"), list):
        raise TaskFormatError(f"{path}: field 'sets' must be a list of task sets")
    registry = Registry(name=str(doc.get("name", path.parent.name)), env=str(doc.get("env", "shell")))
    for i, raw in enumerate(doc["sets"]):
        if not isinstance(raw, dict) or "files" not in raw:
            raise TaskFormatError(f"{path}: sets[{i}] needs 'files' (a glob relative to {path.parent})")
        unknown = set(raw) - {"split", "files", "scripts", "index_prefix"}
        if unknown:
            raise TaskFormatError(f"{path}: sets[{i}] has unknown field(s) {', '.join(sorted(unknown))}")
        spec = TaskSet(split=str(raw.get("split", "")), files=str(raw["files"]),
                       scripts=raw.get("scripts"), index_prefix=str(raw.get("index_prefix", "")))
        registry.tasks.extend(_load_set(path.parent, spec))
    return registry


def load_registry(path: str | Path) -> Registry:
    """Load a registry from registry.yaml, an AgentBench os_interaction folder (or its data
    folder), a folder of task files, or one task file."""
    from loraloop.tasks.agentbench import agentbench_registry

    path = Path(path)
    if path.is_dir() and (path / REGISTRY_FILE).exists():
        path = path / REGISTRY_FILE
    if path.is_file() and path.suffix == ".json" and (snapshot := _snapshot(path)) is not None:
        registry = snapshot
    elif path.suffix in (".yaml", ".yml") and path.is_file():
        registry = _registry_yaml(path)
    elif path.is_dir() and (published := agentbench_registry(path)) is not None:
        return published
    elif path.is_dir():
        registry = Registry(name=path.name, env="shell")
        for sub in sorted({p.parent for p in path.rglob("*.json")}):
            split = sub.name if sub != path else ""
            registry.tasks.extend(_load_set(sub, TaskSet(split=split, files="*.json",
                                                         index_prefix=f"{split}-" if split else "")))
    elif path.is_file():
        registry = Registry(name=path.stem, env="shell",
                            tasks=_load_set(path.parent, TaskSet(split="", files=glob.escape(path.name),
                                                                 index_prefix=f"{path.stem}-",
                                                                 stem_in_index=False)))
    else:
        raise TaskFormatError(f"task registry {path} does not exist")
    _check_unique(registry)
    return registry


def registries_below(path: str | Path) -> list[Path]:
    """The registry.yaml files under a folder that is not itself a registry (configs/tasks holds
    os/registry.yaml and web/registry.yaml); empty for a registry, a task folder or a file."""
    from loraloop.tasks.agentbench import find_layout

    path = Path(path)
    if not path.is_dir() or (path / REGISTRY_FILE).exists() or find_layout(path) is not None:
        return []
    return sorted(path.rglob(REGISTRY_FILE))


def _snapshot(path: Path) -> Registry | None:
    """A REAL registry snapshot (`loraloop tasks snapshot`): tasks and eval scripts in one JSON file."""
    doc = _read_json(path)
    if len(doc) != 1 or not isinstance(doc[0], dict) or "tasks" not in doc[0]:
        return None
    doc = doc[0]
    if not isinstance(doc["tasks"], list) or not isinstance(doc.get("eval_scripts", {}), dict):
        raise TaskFormatError(f"{path}: field 'tasks' must be a list and 'eval_scripts' an object")
    name = f"{doc.get('source', 'real')}-{doc.get('version', '')}".rstrip("-")
    return Registry(name=name, env="web", tasks=[
        parse_web_task(raw, file=str(path), number=i, split=str(doc.get("split", "")),
                       scripts=doc.get("eval_scripts", {}))
        for i, raw in enumerate(doc["tasks"])])


def missing_scripts(task: Task) -> list[str]:
    """Script files a task names that do not exist under its scripts folder (REAL tasks check theirs on load)."""
    if isinstance(task, WebTask):
        return []
    base = task.scripts_dir or Path(".")
    scripts = list(task.init) + [task.example] + list(getattr(task.evaluation, "checks", ()))
    return [str(base / s.file) for s in scripts if s is not None and s.file and not (base / s.file).is_file()]
