"""What every task kind shares: the registry of tasks, task sets and reading task files.

This module knows no kind: a task set is read by the parse function its caller passes (a kind's task format, or
the loader's, which asks the kinds: loraloop/task_registry.py), so a published layout such as AgentBench's builds
on it without a cycle back to the kinds or the loader.
"""

from __future__ import annotations

import glob
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field, is_dataclass, replace
from pathlib import Path
from typing import Any, Protocol, cast

from loraloop.errors import TaskFormatError

REGISTRY_FILE = "registry.yaml"
TASK_SUFFIXES = (".json", ".jsonl")  # what AgentBench keeps of a set's glob


class Task(Protocol):
    """What loraloop reads of any task, whatever its kind (read-only: the kinds' tasks are frozen dataclasses)."""

    @property
    def env(self) -> str:  # the kind that runs it: `shell`, `web`
        ...

    @property
    def index(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def split(self) -> str: ...

    @property
    def category(self) -> str: ...

    @property
    def labels(self) -> tuple[str, ...]: ...

    @property
    def source(self) -> str: ...

    @property
    def short_index(self) -> str | None:
        """Another name the task answers to (AReaL's short form, REAL's bare id), or None."""


@dataclass(frozen=True)
class TaskContext:
    """Where a raw task object was read: its file, number, set and scripts folder."""

    file: str
    number: int
    split: str = ""
    stem: str = ""
    index_prefix: str = ""
    stem_in_index: bool = True
    scripts_dir: Path | None = None
    scripts: dict[str, str] | None = None  # scripts carried inline (a REAL snapshot)

    @property
    def index(self) -> str:
        """AgentBench's name for the task: index_prefix + file stem + "-%05d" % number."""
        if self.stem_in_index:
            return f"{self.index_prefix}{self.stem}-{self.number:05d}"
        return f"{self.index_prefix}{self.number:05d}"


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
    ids: str | None = None  # a file naming the tasks the set keeps, `index [family]` a line (read_id_list)


@dataclass
class Registry:
    """An ordered set of tasks addressable by index; `env` is the kind its registry.yaml names, if any."""

    name: str
    env: str = ""
    tasks: list[Task] = field(default_factory=list)
    _by_index: dict[str, Task] = field(default_factory=dict, init=False, repr=False, compare=False)
    _indexed: int = field(default=0, init=False, repr=False, compare=False)  # tasks in _by_index

    def get(self, index: str) -> Task:
        """Return the task with this index, or fail naming it.

        AgentBench names task i of dev.json `dev-001-dev-00000`, while AReaL's examples and datasets
        write `dev-001-00000`; such another name (a task's `short_index`) is accepted when it names
        exactly one task.
        """
        if self._indexed != len(self.tasks):  # built on first use, again after tasks were added (O(1) after)
            self._by_index = {task.index: task for task in reversed(self.tasks)}  # the first of a name wins
            self._indexed = len(self.tasks)
        found = self._by_index.get(index)
        if found is not None:
            return found
        short = [t for t in self.tasks if t.short_index == index]
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
        `std` selects splits std-001 … std-007 (AgentBench's os-std), `std-001` only that one. A term
        may list alternatives joined by `,` (a task must match one): `train+family:a,family:b`. `id:<index>`
        matches one task by its index (`train+id:train-count-ext-00001,id:train-text-00002`: the tasks an RL
        iteration's difficulty pools drew).
        """
        tasks = self.tasks
        if subset:  # "train+family:count-ext,family:grep-count": every term must match, one of its alternatives
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
    """One --subset term, each of its `,`-separated alternatives the task's split or a dash-ended prefix
    of it, its category, a label or `id:<its index>`: true when the task matches one of them."""
    return any(
        name in (task.split, task.category)
        or task.split.startswith(f"{name}-")
        or name in task.labels
        or name == f"id:{task.index}"
        for name in term.split(",")
        if name
    )


def read_task_file(path: Path) -> list:
    """A task file: a JSON list of tasks or one task object; `.jsonl`: one task per line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskFormatError(f"{path}: cannot be read ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:
        raise TaskFormatError(
            f"{path}: not UTF-8 text (byte {exc.start}: {exc.object[exc.start]:#04x}); a task file "
            "is JSON or JSON lines"
        ) from exc
    if path.suffix == ".jsonl":
        tasks = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    tasks.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise TaskFormatError(
                        f"{path}: not valid JSON (line {lineno}, column {exc.colno}: {exc.msg})"
                    ) from exc
        return tasks
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TaskFormatError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from exc
    return data if isinstance(data, list) else [data]


def write_document(doc: dict, out: Path) -> None:
    """Write a registry document (a snapshot) to `out` as indented JSON, atomically: a reader never sees half."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(out)


def snapshot_document(path: Path, sources: tuple[str, ...], unnamed: str = "") -> dict | None:
    """The document of a snapshot file (one JSON object with `tasks`) whose `source` is one of `sources` (`unnamed`
    stands for a document that names none); None for any other path, so that each kind claims only its own."""
    if not (path.is_file() and path.suffix == ".json"):
        return None
    doc = read_task_file(path)
    if len(doc) != 1 or not isinstance(doc[0], dict) or "tasks" not in doc[0]:
        return None
    return doc[0] if doc[0].get("source", unnamed) in sources else None


def load_set(root: Path, spec: TaskSet, parse: Callable[[Any, TaskContext], Task]) -> list[Task]:
    """The tasks of one set, its file glob relative to `root`, each raw task read by `parse` (a kind's task format,
    or `loraloop.kinds.registry.parse_any`, which asks the kinds)."""
    paths = sorted(Path(p) for p in glob.glob(str(root / spec.files)))
    if any(ch in spec.files for ch in "*?["):
        paths = [p for p in paths if p.name.endswith(TASK_SUFFIXES) and p.is_file()]
    if not paths:
        raise TaskFormatError(f"{root / spec.files}: no task file matches")
    scripts_dir = (root / spec.scripts) if spec.scripts else None
    tasks = []
    for path in paths:
        stem = path.name.removesuffix(".jsonl").removesuffix(".json")
        for i, raw in enumerate(read_task_file(path)):
            ctx = TaskContext(
                file=str(path),
                number=i,
                split=spec.split,
                stem=stem,
                index_prefix=spec.index_prefix,
                stem_in_index=spec.stem_in_index,
                scripts_dir=scripts_dir,
            )
            tasks.append(parse(raw, ctx))
    return keep_listed(tasks, root / spec.ids, spec.files) if spec.ids else tasks


def read_id_list(path: Path) -> dict[str, tuple[int, str]]:
    """A list of task indices, `index [family]` a line (`#` starts a comment), as {index: (line, family or '')}.

    One set of a published file split in two (AgentBench's 1,000 training tasks: 900 to train on, 100 held
    out) is two such lists over the same file; fails naming the file and line of a malformed or repeated entry."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TaskFormatError(f"{path}: the task id list a set names does not exist") from None
    except UnicodeDecodeError as exc:
        raise TaskFormatError(f"{path}: not UTF-8 text (byte {exc.start}); a task id list is text") from exc
    listed: dict[str, tuple[int, str]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        if len(fields) > 2:
            raise TaskFormatError(f"{path}: line {number}: expected `index [family]`, got {line.strip()!r}")
        if fields[0] in listed:
            raise TaskFormatError(
                f"{path}: line {number}: task {fields[0]!r} is listed already (line {listed[fields[0]][0]})"
            )
        listed[fields[0]] = (number, fields[1] if len(fields) == 2 else "")
    return listed


def keep_listed(tasks: list[Task], ids: Path, files: str) -> list[Task]:
    """The tasks an id list names, in their files' order, each with its family as the label `family:NAME` (so
    `--subset heldout+family:NAME` selects it); fails naming the list's line of an id no task has."""
    listed = read_id_list(ids)
    known = {task.index for task in tasks}
    for index, (number, _) in listed.items():
        if index not in known:
            raise TaskFormatError(f"{ids}: line {number}: no task {index!r} in {files}")
    kept = []
    for task in tasks:
        if task.index in listed:
            family = listed[task.index][1]
            kept.append(labelled(task, f"family:{family}") if family else task)
    return kept


def labelled(task: Task, label: str) -> Task:
    """The task with one more label: a copy (the kinds' tasks are frozen dataclasses); a task of another shape
    fails naming it."""
    if not is_dataclass(task) or isinstance(task, type):
        raise TaskFormatError(f"task {task.index}: a {type(task).__name__}, not a dataclass, cannot take a label")
    return cast(Task, replace(task, labels=(*task.labels, label)))  # the same class, one field changed


def load_sets(
    name: str, root: Path, sets: list[TaskSet], parse: Callable[[Any, TaskContext], Task], env: str = ""
) -> Registry:
    """A registry made of task sets whose paths are relative to `root` (or absolute), read by `parse`."""
    registry = Registry(name=name, env=env)
    for spec in sets:
        registry.tasks.extend(load_set(Path(root), spec, parse))
    check_unique(registry)
    return registry


def check_unique(registry: Registry) -> None:
    """Fail naming both sources when two tasks share an index."""
    seen: dict[str, str] = {}
    for task in registry.tasks:
        if task.index in seen:
            raise TaskFormatError(f"duplicate task index {task.index!r} in {seen[task.index]} and {task.source}")
        seen[task.index] = task.source
