"""Run one planned episode for a job: skip it when the job was cancelled, stop it when the job is, count it.

The Celery worker's task and the embedded default's threads both call `play`, with the job book they
keep (Redis or memory), so an episode runs the same code wherever it runs.
"""
from __future__ import annotations

from typing import Protocol

from loraloop.rollout.episode import run_episode
from loraloop.rollout.sampler import EpisodeSpec
from loraloop.settings import Settings


class Tally(Protocol):
    """What `play` needs of a job book: whether the job was cancelled, and where to count an episode."""

    def cancelled(self, run_id: str) -> bool: ...

    def record(self, run_id: str, summary: dict) -> None: ...


def crash_summary(exc: BaseException, spec: EpisodeSpec | None = None) -> dict:
    """The summary of an episode whose code raised: failed, with the exception named."""
    where = {"task_id": spec.task_id, "attempt": spec.attempt} if spec else {}
    return {**where, "success": False, "status": "crash", "error": f"{type(exc).__name__}: {exc}"}


def play(spec: EpisodeSpec, settings: Settings, book: Tally) -> dict:
    """Play the episode (stored by run_episode, even when it fails), count it in the book, return its summary.

    A job cancelled before the episode starts counts it as `cancelled` without playing; one cancelled
    while it runs stops it at its next step. An exception is counted as a crash, then raised again.
    """
    if book.cancelled(spec.run_id):
        summary = {"task_id": spec.task_id, "attempt": spec.attempt, "success": False, "status": "cancelled",
                   "error": None, "steps": 0}
    else:
        try:
            summary = run_episode(spec, settings, should_stop=lambda: book.cancelled(spec.run_id))
        except Exception as exc:
            book.record(spec.run_id, crash_summary(exc, spec))
            raise
    book.record(spec.run_id, summary)
    return summary
