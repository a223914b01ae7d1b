"""The Celery application: one task per episode, Redis as broker and result backend.

The task plays its episode with the job book of the worker's broker (`loraloop.rollout.runner.play`),
the code the embedded default runs in its threads. Queueing and revoking live in
`loraloop.service.jobs`, which receives this app; nothing here imports them back.
"""
from __future__ import annotations

from celery import Celery

from loraloop.rollout.runner import play
from loraloop.rollout.sampler import EpisodeSpec
from loraloop.service.book import job_book
from loraloop.service.jobs import EPISODE_TASK
from loraloop.settings import get_settings

_settings = get_settings()
app = Celery("loraloop", broker=_settings.broker_url or "memory://",
             backend=_settings.broker_url or "cache+memory://")
app.conf.update(
    task_serializer="json", result_serializer="json", accept_content=["json"],
    task_acks_late=True, task_reject_on_worker_lost=True, worker_prefetch_multiplier=1,
    result_expires=7 * 24 * 3600, broker_connection_retry_on_startup=True,
    # Scan for episodes of dead workers every 10 s (kombu scans every 100 s by default).
    broker_transport_options={"visibility_timeout": _settings.visibility_timeout_s, "unacked_restore_throttle": 1},
)


@app.task(name=EPISODE_TASK, acks_late=True)
def run_episode_task(spec: dict) -> dict:
    """Celery entry point: run the episode (unless its job was cancelled) and report it to the job's book."""
    settings = get_settings()
    return play(EpisodeSpec(**spec), settings, job_book(settings.broker_url))
