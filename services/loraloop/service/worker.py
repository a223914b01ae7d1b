"""Start a Celery rollout worker: broker checked, dead owners' containers reaped, its own released at shutdown.

At start the worker removes environment containers whose owner process died (a worker killed with
`kill -9`), and again every LORALOOP_REAP_INTERVAL_S; on shutdown it removes its own and closes the
browsers it started. The container pool is warmed before the first episode arrives.
"""
from __future__ import annotations

import threading
import time
from typing import Callable

from celery.signals import worker_shutdown

from loraloop.envs.shell import docker
from loraloop.envs.shell.pool import get_pool
from loraloop.envs.web.browser import close_browsers
from loraloop.errors import ConfigError, LoraloopError
from loraloop.rollout.preflight import require_redis
from loraloop.service.celery_app import app
from loraloop.settings import Settings


def reap_every(interval_s: float, say: Callable[[str], None]) -> threading.Thread:
    """Remove dead owners' containers on a timer, in a daemon thread; an engine away is said, then retried."""
    def loop() -> None:
        while True:
            time.sleep(interval_s)
            try:
                docker.reap()
            except LoraloopError as exc:  # the engine is back on the next tick, or the worker says so
                say(f"reaper: {exc}")

    thread = threading.Thread(target=loop, name="reaper", daemon=True)
    thread.start()
    return thread


def release_at_shutdown() -> None:
    """On worker shutdown, remove this process's containers and close its browsers."""
    def release(**_kwargs) -> None:
        docker.reap(owner=docker.owner_id())
        close_browsers()

    worker_shutdown.connect(release, weak=False)


def run_worker(settings: Settings, concurrency: int, loglevel: str, say: Callable[[str], None]) -> None:
    """Prepare this process as a rollout worker, then run Celery's worker loop until it is stopped."""
    if not settings.broker_url:
        raise ConfigError("worker needs LORALOOP_BROKER_URL (e.g. redis://127.0.0.1:6379/0)")
    require_redis(settings.broker_url)
    reaped = docker.reap()
    if reaped:
        say(f"removed {reaped} environment container(s) left by a process that died")
    release_at_shutdown()
    reap_every(settings.reap_interval_s, say)
    get_pool(settings.pool_size, settings.output_cap_bytes).warm(settings.os_env_image,
                                                                docker.Limits.from_settings(settings))
    app.worker_main(["worker", "--pool", "threads", "--concurrency", str(concurrency), "--loglevel", loglevel,
                     "--without-gossip", "--without-mingle"])
