"""`loraloop tasks`: validate, list, import and snapshot task registries."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from loraloop.cli.common import REGISTRY
from loraloop.errors import LoraloopError

app = typer.Typer(help="Task registries.", no_args_is_help=True)


def _validate_one(path: Path) -> str:
    """Load one registry and check the files its tasks name exist; return its summary line."""
    from loraloop.tasks.registry import load_registry, missing_files

    registry = load_registry(path)
    missing = [f"{t.index}: missing script {m}" for t in registry.tasks for m in missing_files(t)]
    if missing:
        raise LoraloopError("; ".join(missing))
    splits = {}
    for task in registry.tasks:
        splits[task.split or "-"] = splits.get(task.split or "-", 0) + 1
    return f"{path}: {len(registry.tasks)} valid tasks ({', '.join(f'{k}: {v}' for k, v in splits.items())})"


@app.command("validate")
def tasks_validate(path: Path = typer.Argument(..., help="task file, folder, registry.yaml, or a folder of registries")
                   ) -> None:
    """Check a task file or folder: format, fields and referenced scripts. A folder holding
    registries below it (configs/tasks: os/registry.yaml, web/registry.yaml) checks each one."""
    from loraloop.tasks.registry import registries_below

    below = registries_below(path)
    if not below:
        typer.echo(_validate_one(path))
        return
    failed = []
    for registry in below:
        try:
            typer.echo(_validate_one(registry))
        except LoraloopError as exc:
            failed.append(f"{registry}: {exc}")
    if failed:
        raise LoraloopError(f"{len(failed)} of {len(below)} registries under {path} are invalid: " + "; ".join(failed))


@app.command("list")
def tasks_list(task_registry: Path = REGISTRY, subset: Optional[str] = typer.Option(None, "--subset")) -> None:
    """Print the tasks of a registry (index, split, labels, description)."""
    from loraloop.tasks.registry import load_registry

    for task in load_registry(task_registry).select(subset):
        typer.echo(f"{task.index}\t{task.split}\t{','.join(task.labels)}\t{task.description[:90]}")


@app.command("import")
def tasks_import(fmt: str = typer.Argument(..., metavar="FORMAT", help="the published format: agentbench-os"),
                 data: Path = typer.Option(..., "--data", help="AgentBench's data/os_interaction/data folder"),
                 scripts: Path = typer.Option(..., "--scripts", help="AgentBench's data/os_interaction/scripts folder"),
                 out: Path = typer.Option(..., "--out", help="registry folder to write (configs/tasks/NAME)"),
                 force: bool = typer.Option(False, "--force", help="replace --out when it exists")) -> None:
    """Copy a published task set and its scripts into a self-contained registry folder, then validate it."""
    from loraloop.tasks.shell.agentbench import FORMAT, import_agentbench_os

    if fmt != FORMAT:
        raise LoraloopError(f"tasks import: unknown format {fmt!r} (available: {FORMAT})")
    registry = import_agentbench_os(data, scripts, out, force=force)
    splits: dict[str, int] = {}
    for task in registry.tasks:
        splits[task.split] = splits.get(task.split, 0) + 1
    typer.echo(f"{out}: imported {len(registry.tasks)} valid tasks "
               f"({', '.join(f'{k}: {v}' for k, v in splits.items())}); use --task_registry {out}")


@app.command("snapshot")
def tasks_snapshot(source: str = typer.Option("real", "--source", help="real (AGI Inc's REAL, from agisdk)"),
                   version: str = typer.Option("v2", "--version", "--task_version", help="v1 | v2"),
                   out: Path = typer.Option(Path("configs/real_v2_task_registry.json"), "--out")) -> None:
    """Freeze a published web task registry (tasks + eval scripts) into one JSON file, offline."""
    from loraloop.tasks.web.snapshot import write_snapshot

    doc = write_snapshot(source, version, out)
    sites = sorted({t["website"]["id"] for t in doc["tasks"]})
    typer.echo(f"{out}: {len(doc['tasks'])} tasks of {source} {version} (agisdk {doc['agisdk_version']}) over "
               f"{', '.join(sites)}; {len(doc['eval_scripts'])} eval scripts; use --task_registry {out}")
