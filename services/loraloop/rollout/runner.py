"""Run a rollout and show its progress: in-process threads (embedded default) or Celery workers.

Both paths execute the same Celery task code. The progress bar reads one status shape
(done, solved, failed, success rate, episodes per minute) whether it comes from local
futures, the Redis job book or the rollout API.
"""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Callable

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from loraloop.rollout.preflight import check_servers
from loraloop.rollout.sampler import EpisodeSpec
from loraloop.settings import Settings

Status = dict
FINAL_STATES = ("done", "cancelled")


def progress_bar(quiet: bool) -> Progress:
    """Episodes done of total, solved, failed, success rate so far and episodes per minute."""
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("episodes · solved {task.fields[solved]} · failed {task.fields[failed]} · "
                               "rate {task.fields[rate]} · {task.fields[epm]} ep/min"),
                    TimeElapsedColumn(), disable=quiet)


def show(progress: Progress, bar, status: Status) -> None:
    """Move the bar to a status."""
    rate = status.get("success_rate")
    progress.update(bar, completed=status["done"], total=status["total"], solved=status["solved"],
                    failed=status["failed"], rate="-" if rate is None else f"{rate:.0%}",
                    epm=status.get("episodes_per_min", 0.0))


def local_status(run_id: str, mode: str, total: int, summaries: list[dict], started: float) -> Status:
    """The status of a rollout running in this process, in the job book's shape."""
    done = len(summaries)
    solved = sum(bool(s.get("success")) for s in summaries)
    elapsed = max(time.monotonic() - started, 1e-6)
    return {"run_id": run_id, "mode": mode, "state": "done" if done >= total else "running", "total": total,
            "done": done, "solved": solved, "failed": sum(bool(s.get("error")) for s in summaries),
            "success_rate": round(solved / done, 4) if done else None,
            "episodes_per_min": round(done / elapsed * 60, 2),
            "recent_errors": [f"{s.get('task_id')}: {s['error']}" for s in summaries if s.get("error")][:5],
            "unplayable": [f"{s.get('task_id')}: {s.get('reason')}" for s in summaries if s.get("status") == "skipped"]}


def follow(poll: Callable[[], Status], *, quiet: bool = False, interval: float = 0.5) -> Status:
    """Show a remote job's progress until it is done or cancelled; return its last status."""
    status = poll()
    with progress_bar(quiet) as progress:
        bar = progress.add_task(status["mode"], total=status["total"], solved=0, failed=0, rate="-", epm=0.0)
        while True:
            show(progress, bar, status)
            if status["state"] in FINAL_STATES:
                return status
            time.sleep(interval)
            status = poll()


def _summary(value, spec: EpisodeSpec) -> dict:
    """An episode's summary, or a failed one naming its task and the exception it raised."""
    if isinstance(value, dict):
        return value
    return {"task_id": spec.task_id, "attempt": spec.attempt, "success": False, "status": "crash",
            "error": f"{type(value).__name__}: {value}"}


def execute(specs: list[EpisodeSpec], settings: Settings, *, concurrency: int | None = None,
            quiet: bool = False) -> list[dict]:
    """Run every episode not yet stored and return their summaries (stored ones come back as skipped).

    Without a broker the Celery task runs eagerly in a thread pool here; with one, the run is booked
    and queued for `loraloop worker` processes and followed until it ends.
    """
    from loraloop.rollout.celery_app import app, bound_task

    check_servers(specs, settings)
    task = bound_task()
    if settings.broker_url:
        from loraloop.rollout.jobs import enqueue, job_book, spec_key

        book = job_book(settings.broker_url)
        run_id, todo = enqueue(specs, settings, book)
        final = follow(lambda: book.status(run_id), quiet=quiet)
        results = [(app.AsyncResult(spec_key(s)), s) for s in todo]
        return [_summary(r.get(propagate=False, timeout=60), s) for r, s in results
                if final["state"] == "done" or r.ready()]
    run_id, mode = (specs[0].run_id, specs[0].mode) if specs else ("-", "rollout")
    summaries: list[dict] = []
    started = time.monotonic()
    with progress_bar(quiet) as progress:
        bar = progress.add_task(mode, total=len(specs), solved=0, failed=0, rate="-", epm=0.0)
        with ThreadPoolExecutor(max_workers=concurrency or settings.concurrency) as pool:
            futures = {pool.submit(lambda s: task.apply(args=(s.to_dict(),), kwargs={"settings": settings})
                                   .get(propagate=False), spec): spec
                       for spec in specs}
            for future in as_completed(futures):
                summaries.append(_summary(future.result(), futures[future]))
                show(progress, bar, local_status(run_id, mode, len(specs), summaries, started))
    return summaries
