"""Rollout jobs: plan a job's episodes, book it, queue them on Celery, cancel it.

A job is a run: one Celery task per episode, whose task id is the episode's store key, so a
job submitted again with the same run id resumes (stored episodes are skipped) and a
redelivered episode never writes a second copy. Workers report each finished episode into
the job's book, which the API, `loraloop jobs` and the Prometheus metrics read.

This module never imports the worker's Celery app: queueing and revoking take a Celery app as an
argument (`loraloop.service.queue.celery_for`), and the worker's task imports the book, not the reverse.
"""

from __future__ import annotations

from typing import Protocol

from celery import Celery

from loraloop.errors import ConfigError, LoraloopError
from loraloop.paths import in_project, places
from loraloop.rollout.experiments import get_experiment
from loraloop.rollout.preflight import check_servers
from loraloop.rollout.sampler import EpisodeSpec, new_run_id, plan_rollout
from loraloop.service.book import JobBook
from loraloop.service.models import JobRequest, JobStatus
from loraloop.settings import Settings
from loraloop.store import open_store
from loraloop.store.backends import Store
from loraloop.store.integrity import record_plan
from loraloop.store.trajectories import episode_key, run_prefix
from loraloop.task_registry import load_registry, remember

EPISODE_TASK = "loraloop.run_episode"


class Book(Protocol):
    """Where a job is booked: `JobBook` (Redis) or `MemoryBook` (this process)."""

    def create(
        self, run_id: str, mode: str, request: JobRequest | None, keys: list[str], skipped: int, store_url: str = ""
    ) -> None: ...

    def status(self, run_id: str) -> JobStatus: ...


def check_task_root(task_registry: str, settings: Settings) -> None:
    """Refuse (ConfigError, a 400) a registry path outside LORALOOP_TASK_ROOTS, before anything reads it.

    The API plans a job from files on its own host, and a registry's errors quote what they read: without the
    roots a caller could make it read and quote any file (`/etc`). The refusal names the roots, not the path, and
    so does the one for a registry that does not exist (the places looked in are host paths).
    """
    roots = [root.strip() for root in settings.task_roots.split(",") if root.strip()]
    here = places(task_registry)
    path = next((p for p in here if p.exists()), here[-1]).resolve()
    if not any(path.is_relative_to(in_project(root).resolve()) for root in roots):
        raise ConfigError(
            f"task_registry must lie under one of this API's task roots ({', '.join(roots) or 'none'}; "
            "LORALOOP_TASK_ROOTS)"
        )
    if not path.exists():
        raise ConfigError(
            f"task registry {task_registry[:200]} does not exist under this API's task roots ({', '.join(roots)})"
        )


def plan_job(request: JobRequest, settings: Settings) -> list[EpisodeSpec]:
    """Every episode of the job (run id: the request's or a new one), once every server they need answers.

    A bad experiment, registry or subset, or a server down, fails naming it before anything is booked.
    A bare adapter name is pinned here to the version published last, for every episode of the job.
    """
    experiment = get_experiment(settings.experiments_path, request.experiment)
    registry = remember(request.task_registry, load_registry(request.task_registry))  # read fresh, used by all
    specs = plan_rollout(
        registry,
        request.task_registry,
        experiment,
        run_id=request.run_id or new_run_id(),
        subset=request.subset,
        sample_size=request.sample_size,
        rollouts_per_task=request.rollouts_per_task,
        seed=request.seed,
        task_seed=request.task_seed,
        temperature=request.temperature,
        model=request.model,
    )
    return check_servers(specs, settings)  # with adapter models pinned to their version


def spec_key(spec: EpisodeSpec) -> str:
    """The episode's store key, which is also its Celery task id (idempotent)."""
    return episode_key(spec.mode, spec.run_id, spec.task_id, spec.attempt)


def pending_specs(specs: list[EpisodeSpec], store: Store) -> list[EpisodeSpec]:
    """The episodes not yet in the store: resubmitting a run plays only what is missing. One listing of each run's
    folder, not a request per episode (each episode's own check is its one read in run_episode)."""
    stored = {key for run in {(s.mode, s.run_id) for s in specs} for key in store.list(run_prefix(*run))}
    return [spec for spec in specs if spec_key(spec) not in stored]


def book_job(
    specs: list[EpisodeSpec], settings: Settings, book: Book, request: JobRequest | None = None
) -> tuple[str, list[EpisodeSpec]]:
    """Book the run with its episodes not yet stored; return the run id and those episodes.

    A job is one run (the book counts an episode under its spec's run id): episodes of several runs fail.
    """
    runs = sorted({spec.run_id for spec in specs})
    if len(runs) > 1:
        raise LoraloopError(f"a job is one run, these episodes belong to {len(runs)}: {', '.join(runs)}")
    run_id, mode = (specs[0].run_id, specs[0].mode) if specs else (new_run_id(), "empty")
    store = open_store(settings=settings)
    if specs:
        record_plan(store, mode, run_id, [spec_key(s) for s in specs])
    todo = pending_specs(specs, store)
    book.create(
        run_id, mode, request, [spec_key(s) for s in todo], skipped=len(specs) - len(todo), store_url=store.shown
    )
    return run_id, todo


def enqueue(
    specs: list[EpisodeSpec], settings: Settings, book: JobBook, queue: Celery, request: JobRequest | None = None
) -> str:
    """Book the run and queue its episodes not yet stored, one Celery task each; return the run id."""
    run_id, todo = book_job(specs, settings, book, request)
    queued = {spec_key(spec): spec.to_dict() for spec in todo}
    send_episodes(queue, queued)
    # Booked once all are sent: a worker connecting meanwhile would take the episodes not sent yet for lost.
    book.keep_specs(run_id, queued)
    return run_id


def send_episodes(queue: Celery, specs: dict[str, dict]) -> None:
    """Queue episodes (specs as dicts, by store key), one Celery task each whose task id is the key."""
    for key, spec in specs.items():
        queue.send_task(EPISODE_TASK, args=(spec,), task_id=key)


def submit(request: JobRequest, settings: Settings, book: JobBook, queue: Celery) -> JobStatus:
    """Plan the job, check its servers, queue it; return its status."""
    return book.status(enqueue(plan_job(request, settings), settings, book, queue, request))


def cancel(run_id: str, book: JobBook, queue: Celery) -> JobStatus:
    """Cancel a job: revoke its queued episodes; running ones end at their next step, stored."""
    keys = book.cancel(run_id)
    if keys:
        queue.control.revoke(keys)
    return book.status(run_id)
