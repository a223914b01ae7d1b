"""How the CLI reaches jobs: the rollout API (LORALOOP_API_URL), the broker (LORALOOP_BROKER_URL) or this process.

All three answer the `Jobs` interface, so `loraloop rollout` submits and follows a job the same way
wherever its episodes run.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Protocol

import httpx

from loraloop.errors import ConfigError, LoraloopError, ServiceUnavailable
from loraloop.rollout.preflight import check_servers
from loraloop.rollout.runner import crash_summary
from loraloop.rollout.sampler import EpisodeSpec
from loraloop.rollout.summary import EpisodeSummary
from loraloop.service.book import JobRunning, job_book
from loraloop.service.jobs import cancel, enqueue, submit
from loraloop.service.local import LocalJobs
from loraloop.service.models import JobRequest, JobStatus
from loraloop.service.progress import follow
from loraloop.service.queue import celery_for
from loraloop.settings import Settings


class Jobs(Protocol):
    """Submit, follow, list and cancel jobs."""

    def submit(self, request: JobRequest) -> JobStatus: ...

    def status(self, run_id: str) -> JobStatus: ...

    def list(self, limit: int = 50) -> list[JobStatus]: ...

    def cancel(self, run_id: str) -> JobStatus: ...


class ApiJobs:
    """Jobs through the rollout API's HTTP routes; its errors come back as one line with the detail."""

    def __init__(self, url: str, token: str = "") -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=self.url, headers=headers, timeout=60)

    def _call(self, method: str, path: str, **kwargs) -> Any:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ServiceUnavailable(f"rollout API unreachable at {self.url} ({type(exc).__name__})") from exc
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail")
            except ValueError:
                detail = response.text[:300]
            kind = JobRunning if response.status_code == 409 else LoraloopError
            raise kind(f"rollout API {method} {path}: HTTP {response.status_code}: {detail}")
        return response.json()

    def submit(self, request: JobRequest) -> JobStatus:
        """POST /api/jobs."""
        return JobStatus.model_validate(self._call("POST", "/api/jobs", json=request.model_dump()))

    def status(self, run_id: str) -> JobStatus:
        """GET /api/jobs/{run_id}."""
        return JobStatus.model_validate(self._call("GET", f"/api/jobs/{run_id}"))

    def list(self, limit: int = 50) -> list[JobStatus]:
        """GET /api/jobs."""
        return [JobStatus.model_validate(job) for job in self._call("GET", "/api/jobs", params={"limit": limit})]

    def cancel(self, run_id: str) -> JobStatus:
        """POST /api/jobs/{run_id}/cancel."""
        return JobStatus.model_validate(self._call("POST", f"/api/jobs/{run_id}/cancel"))


class BrokerJobs:
    """Jobs through the Redis job book and Celery, from this process (no API server needed)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.book = job_book(settings.broker_url)
        self.queue = celery_for(settings)

    def submit(self, request: JobRequest) -> JobStatus:
        """Plan and queue the job here."""
        return submit(request, self.settings, self.book, self.queue)

    def start(self, specs: list[EpisodeSpec], request: JobRequest | None = None) -> JobStatus:
        """Book planned episodes and queue those not yet stored for the workers; return at once."""
        return self.book.status(enqueue(specs, self.settings, self.book, self.queue, request))

    def status(self, run_id: str) -> JobStatus:
        """The job's progress from the book."""
        return self.book.status(run_id)

    def list(self, limit: int = 50) -> list[JobStatus]:
        """The latest jobs from the book."""
        return self.book.list(limit)

    def cancel(self, run_id: str) -> JobStatus:
        """Cancel here: mark it and revoke its queued episodes."""
        return cancel(run_id, self.book, self.queue)

    def summaries(self, run_id: str) -> builtins.list[EpisodeSummary]:  # `list` in this class is BrokerJobs.list
        """The summaries the workers returned, in planned order (a revoked episode has none)."""
        finished = self.book.status(run_id).state == "done"
        results = [self.queue.AsyncResult(key) for key in self.book.keys(run_id)]
        return [_summary(r.get(propagate=False, timeout=60)) for r in results if finished or r.ready()]


def once_ended(submit: Callable[[], JobStatus], status: Callable[[], JobStatus], quiet: bool = False) -> JobStatus:
    """Submit a run; if it is still running (a process killed mid-job left its episodes to the workers),
    follow it to its end first, then submit it again to play what it did not store."""
    try:
        return submit()
    except JobRunning:
        follow(status, quiet=quiet)
        return submit()


def _summary(value: Any) -> EpisodeSummary:
    """A worker's summary (JSON), or a crash summary for the exception a failed task left."""
    return EpisodeSummary.model_validate(value) if isinstance(value, dict) else crash_summary(value)


def with_experiments(settings: Settings, experiments: Path | None) -> Settings:
    """The settings with another experiments file (`--config`); the API reads its own, so not with it."""
    if experiments is None:
        return settings
    if settings.api_url:
        raise ConfigError("--config cannot be used with LORALOOP_API_URL: the API reads its own experiments")
    return settings.model_copy(update={"experiments_path": experiments})


def jobs_client(settings: Settings, *, concurrency: int | None = None, embedded: bool = True) -> Jobs:
    """The API when LORALOOP_API_URL is set, else the broker, else this process (`embedded`).

    `concurrency` is the embedded default's episodes in flight; `embedded=False` (the `jobs`
    commands, which look at jobs other processes run) fails without a service instead.
    """
    if settings.api_url:
        return ApiJobs(settings.api_url, settings.api_token)
    if settings.broker_url:
        return BrokerJobs(settings)
    if embedded:
        return LocalJobs(settings, concurrency)
    raise ConfigError(
        "jobs need the rollout API (LORALOOP_API_URL) or a broker (LORALOOP_BROKER_URL); "
        "without them `loraloop rollout` runs episodes in this process"
    )


def execute(
    specs: list[EpisodeSpec], settings: Settings, *, concurrency: int | None = None, quiet: bool = False
) -> list[EpisodeSummary]:
    """Run planned episodes on the workers (with a broker) or in this process, following them with the
    bar; return the summaries of those played (stored ones are skipped).

    A job is a run: episodes of several runs (verify-exploration's pair) start as one job each, all at
    once, and are followed one after the other.
    """
    specs = check_servers(specs, settings)  # with adapter models pinned to their version
    jobs = BrokerJobs(settings) if settings.broker_url else LocalJobs(settings, concurrency)
    runs = list(dict.fromkeys(spec.run_id for spec in specs))
    for run_id in runs:
        once_ended(
            partial(jobs.start, [spec for spec in specs if spec.run_id == run_id]), partial(jobs.status, run_id), quiet
        )
    summaries = []
    for run_id in runs:
        follow(partial(jobs.status, run_id), quiet=quiet)
        summaries += jobs.summaries(run_id)
    return summaries
