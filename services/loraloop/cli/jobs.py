"""`loraloop jobs` (list, show, cancel jobs on the service) and `loraloop worker` (a process that runs them)."""

from __future__ import annotations

import typer

from loraloop.cli.common import console
from loraloop.settings import get_settings

app = typer.Typer(help="Rollout jobs on the service (LORALOOP_API_URL or LORALOOP_BROKER_URL).", no_args_is_help=True)


def _job_line(job) -> str:
    rate = "-" if job.success_rate is None else f"{job.success_rate:.0%}"
    return (
        f"{job.run_id}\t{job.mode}\t{job.state}\t{job.done}/{job.total} done\t"
        f"{job.solved} solved\t{job.failed} failed\trate {rate}\t{job.episodes_per_min} ep/min"
    )


@app.command("list")
def jobs_list(limit: int = typer.Option(20, "--limit", min=1)) -> None:
    """The latest jobs, newest first."""
    from loraloop.service.client import jobs_client

    for job in jobs_client(get_settings(), embedded=False).list(limit):
        typer.echo(_job_line(job))


@app.command("show")
def jobs_show(
    run_id: str = typer.Argument(...),
    follow_job: bool = typer.Option(False, "--follow", help="show a live progress bar until it ends"),
) -> None:
    """One job's progress and request (JSON), optionally followed to its end."""
    from loraloop.service.client import jobs_client
    from loraloop.service.progress import follow

    jobs = jobs_client(get_settings(), embedded=False)
    status = follow(lambda: jobs.status(run_id)) if follow_job else jobs.status(run_id)
    typer.echo(status.model_dump_json(indent=2))


@app.command("cancel")
def jobs_cancel(run_id: str = typer.Argument(...)) -> None:
    """Cancel a job: queued episodes are dropped, running ones stop at their next step and are stored."""
    from loraloop.service.client import jobs_client

    typer.echo(_job_line(jobs_client(get_settings(), embedded=False).cancel(run_id)))


def worker(
    concurrency: int = typer.Option(4, "--concurrency", help="episodes at once in this worker"),
    loglevel: str = typer.Option("info", "--loglevel"),
) -> None:
    """Start a Celery rollout worker (needs LORALOOP_BROKER_URL, the store URL and the model URL)."""
    from loraloop.service.worker import run_worker

    run_worker(get_settings(), concurrency, loglevel, say=console.print)
