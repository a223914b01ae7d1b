"""Environment kinds: `task.env` names the kind that runs a task, and this is where kinds are registered.

Adding a kind is one folder and one line: write `envs/<kind>/` (its environment and a `kind.py`
holding `KIND`, an `EnvKind`), put its task format in `tasks/<kind>/`, and add the line to
`KIND_MODULES` below. The rollout worker, the Task Server, the exports, preflight and the
trainers then run it without a change: they ask the kind, never which kind it is.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Any

from loraloop.envs.base import EnvKind
from loraloop.errors import TaskFormatError

if TYPE_CHECKING:
    from loraloop.tasks.base import Task, TaskContext

KIND_MODULES = {
    "shell": "loraloop.envs.shell.kind",  # AgentBench's OS interaction: a container and a bash shell
    "web": "loraloop.envs.web.kind",  # REAL's websites: Playwright on Chromium
    "tau2": "loraloop.envs.tau2.kind",  # tau2-bench's customer-service domains: tools, policy, an LLM user
}
DEFAULT_KIND = "shell"  # a task object no kind claims is read as AgentBench's format, which names no kind


@cache
def env_kind(name: str, where: str = "") -> EnvKind:
    """The kind registered under `name`; an unknown name fails naming it, where it came from and the known ones."""
    if name not in KIND_MODULES:
        origin = f"{where}: " if where else ""
        raise TaskFormatError(f"{origin}unknown environment kind {name!r} (known: {', '.join(KIND_MODULES)})")
    return importlib.import_module(KIND_MODULES[name]).KIND


def kinds() -> Iterator[EnvKind]:
    """Every registered kind, in registration order, each imported only when reached: a caller that stops
    at the first kind that answers (a shell export asking for its prompt layout) never loads the others."""
    return (env_kind(name) for name in KIND_MODULES)


def kind_of_raw(raw: Any) -> EnvKind:
    """The kind whose task format a raw task object has (in a folder without a registry.yaml)."""
    return next((kind for kind in kinds() if kind.owns(raw)), env_kind(DEFAULT_KIND))


def parse_any(raw: Any, ctx: TaskContext, env: str = "") -> Task:
    """Parse one raw task with the kind `env` names, else with the first kind that owns it (shell last)."""
    kind = env_kind(env, where=ctx.file) if env else kind_of_raw(raw)
    return kind.parse_task(raw, ctx)
