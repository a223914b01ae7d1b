"""The Celery application: one task per episode, Redis as broker and result backend."""
from __future__ import annotations

from celery import Celery, Task

from loraloop.rollout.episode import run_episode
from loraloop.rollout.sampler import EpisodeSpec
from loraloop.settings import Settings, get_settings

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


@app.task(name="loraloop.run_episode", acks_late=True)
def run_episode_task(spec: dict, settings: Settings | None = None) -> dict:
    """Celery entry point: run the episode (unless its job was cancelled) and report it to the job.

    Workers read their settings from the environment; the embedded default passes its own
    (`task.apply` runs in-process, so the object is never serialized).
    """
    from loraloop.service.jobs import job_book

    episode = EpisodeSpec(**spec)
    settings = settings or get_settings()
    book = job_book(settings.broker_url) if settings.broker_url else None
    if book is not None and book.cancelled(episode.run_id):
        summary = {"task_id": episode.task_id, "attempt": episode.attempt, "success": False,
                   "status": "cancelled", "error": None, "steps": 0}
    else:
        stop = (lambda: book.cancelled(episode.run_id)) if book is not None else None
        try:
            summary = run_episode(episode, settings, should_stop=stop)
        except Exception as exc:  # stored as a crash by run_episode; the job still counts it
            if book is not None:
                book.record(episode.run_id, {"task_id": episode.task_id, "status": "crash", "success": False,
                                             "error": f"{type(exc).__name__}: {exc}"})
            raise
    if book is not None:
        book.record(episode.run_id, summary)
    return summary


def bound_task() -> Task:
    """The episode task bound to the finalized app (threads that finalize it themselves race)."""
    app.finalize(auto=True)
    return app.tasks[run_episode_task.name]
