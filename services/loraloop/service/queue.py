"""The Celery app for a broker: Redis as broker and result backend, one message per episode, acked late.

Clients (the API, `BrokerJobs`) queue and revoke episodes by task name through the app of their own
settings; the worker's app (`loraloop.service.celery_app`) is the same one, with the episode task on it.
"""

from __future__ import annotations

from functools import lru_cache

from celery import Celery

from loraloop.settings import Settings


def celery_for(settings: Settings) -> Celery:
    """This process's Celery app for the settings' broker (the embedded default's: in memory)."""
    return _app(settings.broker_url, settings.visibility_timeout_s)


@lru_cache(maxsize=8)
def _app(broker_url: str, visibility_timeout_s: int) -> Celery:
    app = Celery("loraloop", broker=broker_url or "memory://", backend=broker_url or "cache+memory://")
    app.conf.update(
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        result_expires=7 * 24 * 3600,
        broker_connection_retry_on_startup=True,
        # Scan for episodes of dead workers every 10 s (kombu scans every 100 s by default).
        broker_transport_options={"visibility_timeout": visibility_timeout_s, "unacked_restore_throttle": 1},
    )
    return app
