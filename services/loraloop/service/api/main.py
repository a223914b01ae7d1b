"""Build the rollout API: the routes, their dependencies, and errors as `{"detail": …}` with the right status.

Jobs are booked in Redis and run by `loraloop worker` processes anywhere; this process only plans,
queues and reports, so replicas of it can sit behind a load balancer.
"""

from __future__ import annotations

import redis
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from prometheus_client import CollectorRegistry

from loraloop import http_guards
from loraloop.errors import ConfigError, LoraloopError, ServiceUnavailable, TaskFormatError
from loraloop.rollout.preflight import require_redis
from loraloop.service.api.metrics import JobMetrics
from loraloop.service.api.routes import health, jobs, ui
from loraloop.service.book import JobBook, JobRunning, UnknownJob, without_credentials
from loraloop.service.queue import celery_for
from loraloop.settings import Settings

STATUS = ((UnknownJob, 404), (JobRunning, 409), (ConfigError, 400), (TaskFormatError, 400), (ServiceUnavailable, 503))


def _status(exc: LoraloopError) -> int:
    return next((code for kind, code in STATUS if isinstance(exc, kind)), 500)


def create_app(settings: Settings) -> FastAPI:
    """The rollout API over the broker named in the settings."""
    app = FastAPI(
        title="loraloop rollout API",
        version="1",
        description="Rollout jobs on Celery workers. With LORALOOP_API_TOKEN set, the jobs routes need "
        "`Authorization: Bearer <token>`.",
    )
    app.state.settings = settings
    app.state.book = JobBook(settings.broker_url)
    app.state.queue = celery_for(settings)
    app.state.metrics = CollectorRegistry()
    app.state.metrics.register(JobMetrics(app.state.book))
    app.include_router(jobs.router)
    app.include_router(health.router)
    app.include_router(ui.router)
    app.add_exception_handler(ui.LoginNeeded, ui.login_redirect)
    app.state.login_attempts = ui.LoginAttempts()
    app.middleware("http")(ui.hardening_headers)
    http_guards.install(app, settings.api_max_body_bytes)

    @app.exception_handler(LoraloopError)
    def loraloop_error(_request: Request, exc: LoraloopError) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=_status(exc))

    http_guards.unavailable(app, (redis.RedisError,), "broker", without_credentials(settings.broker_url))

    return app


def serving_app(settings: Settings) -> FastAPI:
    """The API for `loraloop serve rollout-api`, once its broker (LORALOOP_BROKER_URL) answers."""
    if not settings.broker_url:
        raise ConfigError("rollout-api needs LORALOOP_BROKER_URL (e.g. redis://127.0.0.1:6379/0)")
    require_redis(settings.broker_url)
    return create_app(settings)
