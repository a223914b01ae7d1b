"""The kinds' registry: `task.env` names the kind that runs a task, and this is where the name is looked up.

Adding a kind is one folder and one line. The folder holds its environment, its task format and a module
that defines `KIND`, an `EnvKind` (kinds/spec.py); the line registers that module under the kind's name:
either in `KIND_MODULES` below (the bundled kinds), or in the configuration, `LORALOOP_KINDS=name=module`
(several joined by `,`; the module must be importable, e.g. from PYTHONPATH), which reaches every process
of the stack through compose's environment. The rollout worker, the Task Server, the exports, preflight and
the trainers then run it without a change: they ask the kind, never which kind it is.

Kinds are found by module string and imported on first use (Gymnasium's entry points), so this module
imports none of them: it sits above every kind's module and agents/, and only the layers above it (prompts by
style, the task loader, rollout, datasets, train, service, taskserver) ask it.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Any

from loraloop.errors import ConfigError, TaskFormatError
from loraloop.kinds.spec import EnvKind
from loraloop.settings import Settings

if TYPE_CHECKING:
    from loraloop.tasks.base import Task, TaskContext

KIND_MODULES = {
    "shell": "loraloop.kinds.shell",  # AgentBench's OS interaction: a container and a bash shell
    "web": "loraloop.kinds.web",  # REAL's websites: Playwright on Chromium
    "tau2": "loraloop.kinds.tau2",  # tau2-bench's customer-service domains: tools, policy, an LLM user
    "browsergym": "loraloop.kinds.browsergym",  # BrowserGym's tasks (MiniWoB++): their own setup and validate
}
CONFIG_VARIABLE = "LORALOOP_KINDS"  # the one line that registers kinds of one's own: `name=module,name=module`
DEFAULT_KIND = "shell"  # a task object no kind claims is read as AgentBench's format, which names no kind


def configured_kinds(line: str) -> dict[str, str]:
    """The kinds a LORALOOP_KINDS line registers, {name: module}; a malformed entry fails naming it."""
    found: dict[str, str] = {}
    for entry in (part.strip() for part in line.split(",")):
        if not entry:
            continue
        name, sep, module = (piece.strip() for piece in entry.partition("="))
        if not sep or not name.isidentifier() or not all(p.isidentifier() for p in module.split(".")):
            raise ConfigError(f"{CONFIG_VARIABLE}: {entry!r} is not name=module (e.g. quiz=my_kinds.quiz.kind)")
        found[name] = module
    return found


@cache
def kind_modules() -> dict[str, str]:
    """Every registered kind's module: the bundled ones, then the configuration's (which may not replace one)."""
    extra = configured_kinds(Settings().kinds)  # read afresh: the environment or .env, as every setting
    taken = sorted(set(extra) & set(KIND_MODULES))
    if taken:
        raise ConfigError(f"{CONFIG_VARIABLE}: {', '.join(taken)} is a bundled kind's name; choose another")
    return {**KIND_MODULES, **extra}


@cache
def env_kind(name: str, where: str = "") -> EnvKind:
    """The kind registered under `name`; an unknown name fails naming it, where it came from and the known ones,
    and a module that cannot be imported or holds no `KIND` fails naming the module."""
    modules = kind_modules()
    if name not in modules:
        origin = f"{where}: " if where else ""
        raise TaskFormatError(f"{origin}unknown environment kind {name!r} (known: {', '.join(modules)})")
    try:
        kind = getattr(importlib.import_module(modules[name]), "KIND", None)
    except ImportError as exc:
        raise ConfigError(f"kind {name!r}: cannot import {modules[name]} ({exc})") from exc
    if not isinstance(kind, EnvKind) or kind.name != name:
        raise ConfigError(f"kind {name!r}: {modules[name]} must define KIND = EnvKind(name={name!r}, …)")
    return kind


def kinds() -> Iterator[EnvKind]:
    """Every registered kind, in registration order, each imported only when reached: a caller that stops
    at the first kind that answers (a shell export asking for its prompt layout) never loads the others."""
    return (env_kind(name) for name in kind_modules())


def kind_of_raw(raw: Any) -> EnvKind:
    """The kind whose task format a raw task object has (in a folder without a registry.yaml)."""
    return next((kind for kind in kinds() if kind.tasks.owns(raw)), env_kind(DEFAULT_KIND))


def parse_any(raw: Any, ctx: TaskContext, env: str = "") -> Task:
    """Parse one raw task with the kind `env` names, else with the first kind that owns it (shell last)."""
    kind = env_kind(env, where=ctx.file) if env else kind_of_raw(raw)
    return kind.tasks.parse(raw, ctx)
