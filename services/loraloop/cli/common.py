"""What every command group shares: the stderr console and the flags several commands take.

Flag defaults come from `loraloop.defaults`, the one place they are written.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable

import typer
from rich.console import Console

from loraloop import defaults

console = Console(stderr=True)

REGISTRY = typer.Option(
    defaults.TASK_REGISTRY,
    "--task_registry",
    "--task-registry",
    help="registry file or folder (a relative path: from here, else from the loraloop checkout)",
)
EXPERIMENTS = typer.Option(None, "--config", help=f"experiments YAML (default {defaults.EXPERIMENTS})")
SEED = typer.Option(defaults.SEED, "--seed", help="task sampling seed")
TASK_SEED = typer.Option(defaults.TASK_SEED, "--task_seed", "--task-seed", help="base of per-rollout seeds")


def dataclass_command(cls: type, run: Callable[[object], None], doc: str) -> Callable[..., None]:
    """A command whose flags are the fields of a config dataclass (`--field`, its default and its metadata's
    help), as TRL builds its scripts' flags from its configs; it builds the dataclass and calls `run` on it."""
    hints = typing.get_type_hints(cls)
    params = [
        inspect.Parameter(
            f.name,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=hints[f.name],
            default=typer.Option(f.default, f"--{f.name}", help=f.metadata.get("help", "")),
        )
        for f in dataclasses.fields(cls)
    ]

    def command(**values) -> None:
        run(cls(**values))

    command.__dict__["__signature__"] = inspect.Signature(params)  # typer reads the flags from it
    command.__doc__ = doc
    return command
