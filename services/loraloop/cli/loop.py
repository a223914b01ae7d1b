"""`loraloop demo`, `loraloop loop` and `loraloop agentbench`: the whole loop on this machine, once or over
several seeds, and learning on a benchmark."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from loraloop.cli.common import REGISTRY, console, dataclass_command
from loraloop.errors import LoraloopError
from loraloop.settings import get_settings


def demo(
    train_epochs: float = typer.Option(3.0, "--epochs"),
    out: Path = typer.Option(Path("volumes/reports/demo"), "--out"),
    task_registry: Path = REGISTRY,
) -> None:
    """The whole loop on this machine: teacher rollouts, BC export, LoRA training, publish, eval of base and
    adapter on held-out variants of the three task families trained on (the bundled shell tasks' by
    default; the tests give a registry cut to a few of them)."""
    from loraloop.orchestrator import demo_plan, run

    run(get_settings(), out, demo_plan(train_epochs, str(task_registry)))


def loop(
    task_registry: Path = REGISTRY,
    train_subset: str = typer.Option("train+family:count-ext", "--train_subset", "--train-subset"),
    test_subset: str = typer.Option("test+family:count-ext", "--test_subset", "--test-subset"),
    seeds: str = typer.Option("1,2,3", "--seeds", help="training seeds, comma-separated"),
    epochs: float = typer.Option(4.0, "--epochs"),
    lr: float = typer.Option(5e-4, "--lr"),
    rollouts_per_task: int = typer.Option(4, "--rollouts_per_task", "--rollouts-per-task", help="eval attempts"),
    temperature: float = typer.Option(0.7, "--temperature", help="eval sampling temperature"),
    out: Path = typer.Option(Path("volumes/reports/loop"), "--out"),
) -> None:
    """Rollout → export → train → publish → eval, once per seed: does BC beat the base on unseen variants?"""
    from loraloop.orchestrator import LoopPlan, run

    try:
        seed_list = [int(x) for x in seeds.split(",") if x.strip()]
    except ValueError as exc:
        raise LoraloopError(f"--seeds must be integers separated by commas, got {seeds!r}") from exc
    plan = LoopPlan(
        registry=str(task_registry),
        train_subset=train_subset,
        test_subset=test_subset,
        epochs=epochs,
        lr=lr,
        seeds=tuple(seed_list),
        eval_rollouts=rollouts_per_task,
        eval_temperature=temperature,
    )
    run(get_settings(), out, plan)


def _agentbench(plan) -> None:
    """Run (or go on with) a learning run (`agentbench`, `miniwob`) in volumes/reports/<name>, then print where
    its report is."""
    from loraloop.learning import closing_table, run_learning

    out = Path("volumes/reports") / plan.name
    report = run_learning(get_settings(), out, plan)
    console.print(report.read_text(), soft_wrap=True)
    if (out / "summary.json").is_file() and json.loads((out / "summary.json").read_text())["seeds"]:
        console.print(closing_table(out))
    console.print(f"[bold green]report:[/] {report.resolve()}", soft_wrap=True)


def agentbench_command():
    """`loraloop agentbench`, its flags built from LearningPlan."""
    from loraloop.learning_config import LearningPlan

    return dataclass_command(
        LearningPlan,
        _agentbench,
        """Learning on AgentBench OS: teacher episodes on the 900
    training tasks, BC, online RL from BC, and base, BC and BC+RL judged on the 100 held-out tasks, per seed;
    started again, it goes on where it stopped (volumes/reports/NAME).""",
    )


def miniwob_command():
    """`loraloop miniwob`, its flags built from MiniWobPlan (the same run as `agentbench`, MiniWoB++'s defaults)."""
    from loraloop.learning_config import MiniWobPlan

    return dataclass_command(
        MiniWobPlan,
        _agentbench,
        """Learning on MiniWoB++: the scripted solver's episodes on the
    60 trained types' train seeds, BC, online RL from BC, and base, BC and BC+RL judged on the trained types'
    held-out seeds and, for transfer, on the 65 held-out types, per seed; started again, it goes on where it
    stopped (volumes/reports/NAME).""",
    )
