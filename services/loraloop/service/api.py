"""The rollout API (`loraloop rollout-api`): submit, follow and cancel jobs; health and metrics.

Jobs are booked in Redis and run by `loraloop worker` processes anywhere; this process only
plans, queues and reports, so replicas of it can sit behind a load balancer. With
LORALOOP_API_TOKEN set, every route but health and metrics needs `Authorization: Bearer <token>`.
"""
from __future__ import annotations

import secrets

from fastapi import APIRouter, Depends, FastAPI, Header, HTTPException, Response
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from loraloop.errors import ConfigError, LoraloopError, ServiceUnavailable, TaskFormatError
from loraloop.service.jobs import LATENCY_BUCKETS_S, JobBook, JobRequest, UnknownJob, cancel, submit
from loraloop.settings import Settings


def _http_error(exc: LoraloopError) -> HTTPException:
    if isinstance(exc, (ConfigError, TaskFormatError)):
        return HTTPException(400, str(exc))
    if isinstance(exc, ServiceUnavailable):
        return HTTPException(503, str(exc))
    if isinstance(exc, UnknownJob):
        return HTTPException(404, str(exc))
    return HTTPException(500, str(exc))


class JobMetrics:
    """Prometheus collector over the counters workers keep in Redis."""

    def __init__(self, book: JobBook) -> None:
        self.book = book

    def collect(self):
        """Episodes by status, failures by cause, step and model latency, queue depth, jobs by state."""
        raw = self.book.metrics()
        episodes = CounterMetricFamily("loraloop_episodes", "Episodes finished, by status", labels=["status"])
        for status, count in raw["episodes"].items():
            episodes.add_metric([status], count)
        yield episodes
        failures = CounterMetricFamily("loraloop_episode_failures", "Episodes that failed, by cause",
                                       labels=["cause"])
        for cause, count in raw["failures"].items():
            failures.add_metric([cause], count)
        yield failures
        for name, doc in (("step", "Environment time per step"), ("model", "Model time per step")):
            counts, cumulative, buckets = raw[f"{name}_latency"], 0.0, []
            for bound in [*map(str, LATENCY_BUCKETS_S), "+Inf"]:
                cumulative += counts.get(bound, 0.0)
                buckets.append((bound, cumulative))
            yield HistogramMetricFamily(f"loraloop_{name}_latency_seconds", doc, buckets=buckets,
                                        sum_value=counts.get("sum", 0.0))
        yield GaugeMetricFamily("loraloop_queue_depth", "Episodes waiting in the broker queue",
                                value=self.book.queue_depth())
        states = GaugeMetricFamily("loraloop_jobs", "Recent jobs by state", labels=["state"])
        jobs = self.book.list(200)
        for state in ("queued", "running", "done", "cancelled"):
            states.add_metric([state], sum(job["state"] == state for job in jobs))
        yield states


def create_app(settings: Settings) -> FastAPI:
    """The rollout API over the broker named in the settings."""
    book = JobBook(settings.broker_url)
    registry = CollectorRegistry()
    registry.register(JobMetrics(book))

    def authorised(authorization: str | None = Header(None)) -> None:
        if settings.api_token and not (authorization and secrets.compare_digest(
                authorization, f"Bearer {settings.api_token}")):
            raise HTTPException(401, "missing or wrong bearer token (LORALOOP_API_TOKEN)")

    jobs = APIRouter(prefix="/api/jobs", tags=["jobs"], dependencies=[Depends(authorised)])

    @jobs.post("", status_code=201)
    def submit_job(request: JobRequest) -> dict:
        """Plan a rollout and queue its episodes; a run id already stored resumes (stored ones skipped)."""
        try:
            return submit(request, settings, book)
        except LoraloopError as exc:
            raise _http_error(exc) from exc

    @jobs.get("")
    def list_jobs(limit: int = 50) -> list[dict]:
        """The latest jobs, newest first."""
        return book.list(limit)

    @jobs.get("/{run_id}")
    def job_status(run_id: str) -> dict:
        """A job's progress: done, solved, failed, success rate, episodes per minute."""
        try:
            return book.status(run_id)
        except LoraloopError as exc:
            raise _http_error(exc) from exc

    @jobs.post("/{run_id}/cancel")
    def cancel_job(run_id: str) -> dict:
        """Stop a job: queued episodes are dropped, running ones end at their next step and are stored."""
        try:
            return cancel(run_id, book)
        except LoraloopError as exc:
            raise _http_error(exc) from exc

    app = FastAPI(title="loraloop rollout API", version="1")
    app.include_router(jobs)

    @app.get("/api/health", tags=["service"])
    def health() -> dict:
        """Whether the broker answers, and how many episodes wait in its queue."""
        try:
            return {"status": "healthy", "broker": settings.broker_url, "queue_depth": book.queue_depth()}
        except Exception as exc:
            raise HTTPException(503, f"broker unreachable at {settings.broker_url} ({type(exc).__name__})") from exc

    @app.get("/metrics", tags=["service"])
    def metrics() -> Response:
        """Prometheus exposition: episodes, failures by cause, latencies, queue depth, jobs."""
        return Response(generate_latest(registry), media_type="text/plain; version=0.0.4")

    return app
