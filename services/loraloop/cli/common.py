"""What every command group shares: the stderr console and the flags several commands take.

Flag defaults come from `loraloop.defaults`, the one place they are written.
"""
from __future__ import annotations

import typer
from rich.console import Console

from loraloop import defaults

console = Console(stderr=True)

REGISTRY = typer.Option(defaults.TASK_REGISTRY, "--task_registry", "--task-registry",
                        help="registry file or folder (a relative path: from here, else from the loraloop checkout)")
EXPERIMENTS = typer.Option(None, "--config", help=f"experiments YAML (default {defaults.EXPERIMENTS})")
SEED = typer.Option(defaults.SEED, "--seed", help="task sampling seed")
TASK_SEED = typer.Option(defaults.TASK_SEED, "--task_seed", "--task-seed", help="base of per-rollout seeds")
