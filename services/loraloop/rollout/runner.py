"""Run one planned episode for a job: skip it when the job was cancelled, stop it when the job is, count it.

The Celery worker's task and the embedded default's threads both call `play`, with the job book they
keep (Redis or memory), so an episode runs the same code wherever it runs.
"""

from __future__ import annotations

import time
from typing import Protocol

from loraloop.logs import get_logger
from loraloop.rollout.episode import run_episode
from loraloop.rollout.sampler import EpisodeSpec
from loraloop.rollout.summary import EpisodeSummary
from loraloop.settings import Settings
from loraloop.store import open_store
from loraloop.store.browse import run_index


class Tally(Protocol):
    """What `play` needs of a job book: whether the job was cancelled, and where to count an episode."""

    def cancelled(self, run_id: str) -> bool: ...

    def record(self, run_id: str, summary: EpisodeSummary) -> bool: ...  # True when that was the job's last episode

    def retried(self, run_id: str, line: str) -> None: ...  # an episode will be played again: count it, say why


def crash_summary(exc: BaseException, spec: EpisodeSpec | None = None) -> EpisodeSummary:
    """The summary of an episode whose code raised: failed, with the exception named."""
    return EpisodeSummary(
        task_id=spec.task_id if spec else None,
        attempt=spec.attempt if spec else None,
        status="crash",
        error=f"{type(exc).__name__}: {exc}",
    )


def play(spec: EpisodeSpec, settings: Settings, book: Tally) -> EpisodeSummary:
    """Play the episode (stored by run_episode, even when it fails), count it in the book, return its summary.

    A job cancelled before the episode starts counts it as `cancelled` without playing; one cancelled
    while it runs stops it at its next step. An exception is counted as a crash, then raised again. An
    episode the model server or the environment failed (down, 5xx, timeout; a browser or container that did not
    start, a page that crashed) is played again from the start, unstored, after
    LORALOOP_EPISODE_RETRY_DELAY_S (doubling), up to LORALOOP_EPISODE_RETRIES times; the last try is stored
    as it ends, so the job goes on and counts the cause.
    """

    def stopped() -> bool:
        return book.cancelled(spec.run_id)

    tries = settings.episode_retries + 1
    for tried in range(tries):
        if stopped():
            summary = EpisodeSummary(task_id=spec.task_id, attempt=spec.attempt, status="cancelled")
            break
        try:
            summary = run_episode(spec, settings, should_stop=stopped, last_try=tried == tries - 1)
        except Exception as exc:
            if book.record(spec.run_id, crash_summary(exc, spec)):
                index_run(spec, settings)
            raise
        if not summary.retry:
            break
        delay = settings.episode_retry_delay_s * 2**tried
        book.retried(
            spec.run_id,
            f"{spec.task_id}: {summary.error}; played again in {delay:g} s "
            f"(try {tried + 2} of {tries}, LORALOOP_EPISODE_RETRIES)",
        )
        waited_until = time.monotonic() + delay
        while time.monotonic() < waited_until and not stopped():
            time.sleep(min(1.0, delay))
    if book.record(spec.run_id, summary):
        index_run(spec, settings)
    return summary


def index_run(spec: EpisodeSpec, settings: Settings) -> None:
    """After a job's last episode: write the run's index object (store/browse.py), so the viewer and reports
    page through one object instead of reading every episode. A failure here loses nothing (the index is
    built again on first view) and is logged, not raised."""
    try:
        run_index(open_store(settings=settings), spec.mode, spec.run_id)
    except Exception as exc:  # noqa: BLE001 - the episodes are stored; only the shortcut to them is missing
        get_logger("loraloop.rollout", run=spec.run_id).warning(
            "index of run %s/%s not written: %s", spec.mode, spec.run_id, exc
        )
