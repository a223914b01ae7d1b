"""Start a Celery rollout worker: broker checked, every environment kind prepared, released at shutdown.

Each kind prepares the worker process (`EnvKind.worker_start`: the shell kind removes containers whose
owner process died, again every LORALOOP_REAP_INTERVAL_S, and warms its container pool) and releases
what it holds at shutdown (`EnvKind.worker_stop`: the shell kind's containers, the web kind's browsers).
"""

from __future__ import annotations

from collections.abc import Callable

from celery.signals import worker_shutdown

from loraloop.errors import ConfigError
from loraloop.kinds.registry import kinds
from loraloop.rollout.preflight import require_redis
from loraloop.service.celery_app import app
from loraloop.settings import Settings


def release_at_shutdown() -> None:
    """On worker shutdown, every kind releases what this process holds."""

    def release(**_kwargs) -> None:
        for kind in kinds():
            kind.worker.stop()

    worker_shutdown.connect(release, weak=False)


def run_worker(settings: Settings, concurrency: int, loglevel: str, say: Callable[[str], None]) -> None:
    """Prepare this process as a rollout worker, then run Celery's worker loop until it is stopped."""
    if not settings.broker_url:
        raise ConfigError("worker needs LORALOOP_BROKER_URL (e.g. redis://127.0.0.1:6379/0)")
    require_redis(settings.broker_url)
    release_at_shutdown()
    for kind in kinds():
        kind.worker.start(settings, say)
    app.worker_main(
        [
            "worker",
            "--pool",
            "threads",
            "--concurrency",
            str(concurrency),
            "--loglevel",
            loglevel,
            "--without-gossip",
            "--without-mingle",
        ]
    )
