"""Load a task registry from wherever it lives: registry.yaml, a published layout, a folder or a file.

The loader knows no task kind. A registry.yaml names its kind (`env: shell`); a published layout
(AgentBench's os_interaction folder, a REAL snapshot) is recognised by the kind that reads it;
a plain folder or file is parsed task by task by the kind that owns each object. It asks the kinds
(`loraloop.envs`), so it sits above envs/ and tasks/, which never import it.
"""

from __future__ import annotations

import glob
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from loraloop.errors import TaskFormatError
from loraloop.paths import locate
from loraloop.tasks.base import (
    REGISTRY_FILE,
    Registry,
    Task,
    TaskContext,
    TaskSet,
    check_unique,
    load_set,
    read_id_list,
)

__all__ = ["Registry", "Task", "load_registry", "missing_files", "registries_below", "remember", "shared_registry"]

SHARED = 16  # registries a process keeps (shared_registry)
_shared: OrderedDict[str, Registry] = OrderedDict()
_shared_lock = threading.Lock()  # the embedded runner plays episodes on threads


def _registry_yaml(path: Path) -> Registry:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except UnicodeDecodeError as exc:
        raise TaskFormatError(f"{path}: not UTF-8 text (byte {exc.start}); a registry file is YAML") from exc
    except yaml.YAMLError as exc:
        raise TaskFormatError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("sets"), list):
        raise TaskFormatError(f"{path}: field 'sets' must be a list of task sets")
    from loraloop.kinds.registry import DEFAULT_KIND

    env = str(doc.get("env", DEFAULT_KIND))
    registry = Registry(name=str(doc.get("name", path.parent.name)), env=env)
    specs = []
    for i, raw in enumerate(doc["sets"]):
        if not isinstance(raw, dict) or "files" not in raw:
            raise TaskFormatError(f"{path}: sets[{i}] needs 'files' (a glob relative to {path.parent})")
        unknown = set(raw) - {"split", "files", "scripts", "index_prefix", "ids"}
        if unknown:
            raise TaskFormatError(f"{path}: sets[{i}] has unknown field(s) {', '.join(sorted(unknown))}")
        specs.append(
            TaskSet(
                split=str(raw.get("split", "")),
                files=str(raw["files"]),
                scripts=raw.get("scripts"),
                index_prefix=str(raw.get("index_prefix", "")),
                ids=str(raw["ids"]) if raw.get("ids") is not None else None,
            )
        )
    _disjoint_lists(path.parent, specs)
    for spec in specs:
        registry.tasks.extend(load_set(path.parent, spec, _parser(env)))
    return registry


def _disjoint_lists(root: Path, specs: list[TaskSet]) -> None:
    """Fail naming both lists and lines when two sets' id lists share a task (a held-out task listed for
    training too): a task belongs to one split."""
    seen: dict[str, str] = {}
    for spec in specs:
        if spec.ids is None:
            continue
        for index, (line, _) in read_id_list(root / spec.ids).items():
            where = f"{spec.ids} line {line} (split {spec.split!r})"
            if index in seen:
                raise TaskFormatError(
                    f"{root}: task {index!r} is in {seen[index]} and in {where}: a task belongs "
                    "to one split, and a held-out task is never trained on"
                )
            seen[index] = where


def _parser(env: str = "") -> Callable[[Any, TaskContext], Task]:
    """Each raw task parsed by the kind `env` names, else by the first kind that owns it."""
    from loraloop.kinds.registry import parse_any

    return partial(parse_any, env=env)


def _published_layout(path: Path) -> Registry | None:
    """A registry in a layout one kind reads in place (AgentBench's folders, a REAL snapshot), else None."""
    from loraloop.kinds.registry import kinds

    for kind in kinds():
        registry = kind.tasks.layout(path)
        if registry is not None:
            return registry
    return None


def load_registry(path: str | Path) -> Registry:
    """Load a registry from registry.yaml, a layout a kind publishes (an AgentBench os_interaction
    folder, a REAL snapshot), a folder of task files, or one task file; a relative path not found
    here is looked up in the repository (loraloop.paths.locate)."""
    path = locate(path, "task registry", TaskFormatError)
    if path.is_dir() and (path / REGISTRY_FILE).exists():
        path = path / REGISTRY_FILE
    if path.suffix in (".yaml", ".yml") and path.is_file():
        registry = _registry_yaml(path)
    elif (published := _published_layout(path)) is not None:
        registry = published
    elif path.is_dir():
        registry = Registry(name=path.name)
        for sub in sorted({p.parent for p in path.rglob("*.json")}):
            split = sub.name if sub != path else ""
            registry.tasks.extend(
                load_set(
                    sub, TaskSet(split=split, files="*.json", index_prefix=f"{split}-" if split else ""), _parser()
                )
            )
    else:
        registry = Registry(
            name=path.stem,
            tasks=load_set(
                path.parent,
                TaskSet(split="", files=glob.escape(path.name), index_prefix=f"{path.stem}-", stem_in_index=False),
                _parser(),
            ),
        )
    check_unique(registry)
    return registry


def registries_below(path: str | Path) -> list[Path]:
    """The registry.yaml files under a folder that is not itself a registry (configs/tasks holds
    os/registry.yaml and web/registry.yaml); empty for a registry, a published layout, a task folder or a file."""
    path = Path(path)
    if not path.is_dir() or (path / REGISTRY_FILE).exists() or _published_layout(path) is not None:
        return []
    return sorted(path.rglob(REGISTRY_FILE))


def missing_files(task: Task) -> list[str]:
    """Files a task names that do not exist (scripts, for shell tasks), as its kind checks them."""
    from loraloop.kinds.registry import env_kind

    return env_kind(task.env).tasks.missing_files(task)


def remember(path: str, registry: Registry) -> Registry:
    """Keep a registry just loaded as the one `shared_registry(path)` gives this process (a planned rollout's, so
    its preflight and its episodes look their tasks up in the registry that was planned, not a second load)."""
    with _shared_lock:
        _shared[path] = registry
        _shared.move_to_end(path)
        while len(_shared) > SHARED:
            _shared.popitem(last=False)
    return registry


def shared_registry(path: str) -> Registry:
    """The registry at `path` as this process keeps it: loaded once (a worker reads each registry once), the
    SHARED most recent kept."""
    found = _shared.get(path)
    return found if found is not None else remember(path, load_registry(path))
