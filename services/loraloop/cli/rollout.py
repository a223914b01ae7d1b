"""`loraloop rollout`, `eval` and `verify-exploration`: collect episodes wherever the settings say, and compare."""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from pathlib import Path

import typer
from rich.console import Console

from loraloop.cli.common import EXPERIMENTS, REGISTRY, SEED, TASK_SEED, console
from loraloop.input_rules import identifier_problem
from loraloop.service.models import JobRequest, JobStatus
from loraloop.settings import get_settings
from loraloop.store.backends import shown_under

# The flags of every command that plans a job, declared once: (name, type, typer option).
JOB_OPTIONS = [
    ("task_registry", Path, REGISTRY),
    (
        "sample_size",
        int | None,
        typer.Option(None, "--sample_size", "--sample-size", help="tasks drawn with --seed (default: all)"),
    ),
    ("rollouts_per_task", int, typer.Option(1, "--rollouts_per_task", "--rollouts-per-task")),
    ("seed", int, SEED),
    ("task_seed", int, TASK_SEED),
    ("temperature", float | None, typer.Option(None, "--temperature", help="default: the experiment's")),
    ("config", Path | None, EXPERIMENTS),
]


def job_options(command: Callable) -> Callable:
    """Add JOB_OPTIONS to a command's flags (after its own); it receives them as keyword arguments."""

    @functools.wraps(command)
    def wrapper(**kwargs):
        return command(**kwargs)

    own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.kind != p.VAR_KEYWORD]
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind)
        for name, kind, option in JOB_OPTIONS
    ]
    wrapper.__dict__["__signature__"] = inspect.Signature([*own, *shared])  # typer reads the flags from it
    return wrapper


def job_request(experiment: str, subset: str | None, options: dict, **extra) -> JobRequest:
    """The job a command's flags describe: JOB_OPTIONS from `options`, the rest given."""
    fields = {name: options[name] for name, _, _ in JOB_OPTIONS if name in JobRequest.model_fields}
    return JobRequest(
        experiment=experiment, subset=subset, **{**fields, "task_registry": str(options["task_registry"])}, **extra
    )


def run_job(request: JobRequest, config: Path | None, concurrency: int | None) -> JobStatus:
    """Submit a job (to the API, the broker or this process), follow it with the bar, print its summary.

    Returns its final status (the run id, and the replays an evaluation's report counts).
    """
    from loraloop.service.client import jobs_client, with_experiments
    from loraloop.service.progress import follow

    settings = with_experiments(get_settings(), config)
    jobs = jobs_client(settings, concurrency=concurrency)
    asked_at = time.time()
    submitted = jobs.submit(request)
    if submitted.total and submitted.done == submitted.total and submitted.submitted_at < asked_at:
        console.print(
            f"job {submitted.run_id} had ended ({submitted.done}/{submitted.total} done, "
            f"{submitted.solved} solved): nothing left to play, its counts are kept"
        )
    else:
        console.print(
            f"submitted job {submitted.run_id}: {submitted.total} episodes queued, {submitted.skipped} already stored"
        )
    status = follow(lambda: jobs.status(submitted.run_id))
    console.print(
        f"[bold]{request.experiment}[/] run {status.run_id} {status.state}: {status.solved}/{status.done} "
        f"solved, {status.failed} ended in an error"
        + (f" ({', '.join(f'{n} {c}' for c, n in status.failures.items())})" if status.failures else "")
        + ", "
        + (f"{status.unplayable} skipped (the policy cannot play them), " if status.unplayable else "")
        + (f"{status.store_waits} stored after waiting out a store outage, " if status.store_waits else "")
        + (f"{status.retries} replays after a model server or environment failure, " if status.retries else "")
        + f"{status.skipped} already stored; "
        f"{status.episodes_per_min} episodes/min; trajectories in "
        + shown_under(status.store_url or settings.store_url, f"trajectories/{status.mode}/{status.run_id}")
    )
    for line in status.recent_errors[:5]:
        console.print(f"  [yellow]{line}[/]" if line.startswith("skipped ") else f"  [red]{line}[/]")
    return status


@job_options
def rollout(
    experiment: str = typer.Option(..., "--experiment"),
    subset: str | None = typer.Option(None, "--subset", help="split, category or label"),
    run_id: str | None = typer.Option(None, "--run_id", "--run-id"),
    model: str | None = typer.Option(None, "--model", help="override the experiment's served model"),
    concurrency: int | None = typer.Option(None, "--concurrency", help="episodes in flight (embedded)"),
    **options,
) -> None:
    """Collect episodes: per-rollout seed = task_seed + task_index*1000 + attempt."""
    run_job(job_request(experiment, subset, options, run_id=run_id, model=model), options["config"], concurrency)


@job_options
def eval_cmd(
    experiment: list[str] = typer.Option(..., "--experiment", help="repeat for each experiment to compare"),
    subset: str | None = typer.Option("test", "--subset"),
    eval_id: str | None = typer.Option(
        None, "--eval_id", "--eval-id", help="default: a new one; an existing one goes on (stored episodes kept)"
    ),
    out: Path = typer.Option(Path("volumes/reports"), "--out", help="reports go to OUT/<eval_id>/"),
    **options,
) -> None:
    """Roll out each experiment on the same tasks; report success with 95% intervals, pass@k and pass^k, a
    paired test, a CSV and charts under OUT/<eval_id>/, and the figures in the store (evals/<eval_id>/)."""
    from loraloop.errors import ConfigError
    from loraloop.evaluate.matrix import claim, save_results
    from loraloop.evaluate.report import viewer_address, write_report
    from loraloop.rollout.sampler import new_run_id
    from loraloop.store import open_store

    eval_id = eval_id or f"eval-{new_run_id()}"
    problem = identifier_problem(eval_id, "--eval_id")
    if problem:
        raise ConfigError(problem)
    store = open_store(settings=get_settings())
    if not claim(store, eval_id, job_request(experiment[0], subset, options).model_dump()):
        console.print(f"eval {eval_id}: going on (episodes already stored are kept)")
    ended = [
        (name, run_job(job_request(name, subset, options, run_id=eval_id), options["config"], None))
        for name in experiment
    ]
    runs = [(name, status.run_id) for name, status in ended]
    md, rows = write_report(
        store,
        runs,
        out / eval_id,
        f"Evaluation {eval_id} on {subset or 'all'}",
        viewer_url=viewer_address(get_settings()),
        retries={name: status.retries for name, status in ended},
    )
    key = save_results(store, eval_id, rows, runs)
    typer.echo(md.read_text())
    console.print(f"report: {md}  csv: {md.with_suffix('.csv')}  charts: {out / eval_id}/*.png  store: {key}")


def verify_exploration(
    task: str = typer.Option(..., "--task", help="task index, e.g. test-files-00000"),
    experiment: str = typer.Option(..., "--experiment", "--mode"),
    task_registry: Path = REGISTRY,
    task_seed: int = TASK_SEED,
    temperature_a: float = typer.Option(0.0, "--temperature_a", "--temperature-a"),
    temperature_b: float = typer.Option(0.7, "--temperature_b", "--temperature-b"),
    compare_steps: int = typer.Option(10, "--compare_steps", "--compare-steps", min=1, help="actions to compare"),
    config: Path | None = EXPERIMENTS,
) -> None:
    """Play one task at two temperatures with the same seed; exit 0 when the actions differ, else 1."""
    from loraloop.rollout.experiments import get_experiment
    from loraloop.rollout.exploration import actions, compare_actions, comparison_table, plan_pair, read_pair, verdict
    from loraloop.rollout.sampler import new_run_id
    from loraloop.service.client import execute
    from loraloop.task_registry import load_registry

    settings = get_settings()
    specs = plan_pair(
        load_registry(task_registry),
        str(task_registry),
        get_experiment(config or settings.experiments_path, experiment),
        task_id=task,
        run_id=new_run_id(),
        task_seed=task_seed,
        temperatures=(temperature_a, temperature_b),
    )
    console.print(
        f"{experiment}: {task} at T={temperature_a} and T={temperature_b}, seed {specs[0].seed}, "
        f"runs {specs[0].run_id} and {specs[1].run_id}"
    )
    execute(specs, settings, quiet=True)
    episodes = read_pair(specs, settings)
    for episode in episodes:
        if episode.end.error:
            console.print(f"  [red]{episode.key}[/]: {episode.end.error}")
    first, second = (actions(e) for e in episodes)  # the pair: one episode at each temperature
    comparison = compare_actions(first, second, compare_steps)
    Console().print(comparison_table(episodes, comparison))
    typer.echo(verdict(comparison))
    raise typer.Exit(0 if comparison.differs else 1)
