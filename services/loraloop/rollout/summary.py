"""What a driver reports of one episode it played: `EpisodeSummary`, the one type every producer builds (the
episode runner, a skip of a stored episode, a cancel before the start, a crash) and every reader takes (the job
books, the clients, the CLI), instead of dicts read with `.get`. Celery carries it as JSON (`model_dump`)."""

from __future__ import annotations

from pydantic import BaseModel, Field


def episode_id(task_id: str | None, attempt: int | None) -> str:
    """Which planned episode a summary or a spec is of, for counting it once: its task and attempt."""
    return f"{task_id}#{attempt}"


class EpisodeSummary(BaseModel):
    """One played (or skipped, cancelled, crashed) episode: where it is stored, how it ended, what it cost."""

    key: str | None = None  # its store key (None when nothing was stored: a crash, a cancel before the start)
    task_id: str | None = None
    attempt: int | None = None
    steps: int = 0
    success: bool = False
    reward: float = 0.0
    status: str | None = None
    answer: str | None = None
    error: str | None = None  # what failed (an environment, a server, the code)
    reason: str | None = None  # why a skipped episode was not played
    skipped: bool = False  # already stored: not played again
    duplicate: bool = False  # a copy was stored first: this one was dropped
    retry: bool = False  # failed by the infrastructure, unstored: its caller plays it again
    step_ms: list[float | None] = Field(default_factory=list)
    model_ms: list[float] = Field(default_factory=list)
    store_wait_s: float = 0.0  # seconds spent waiting out a store outage before it was stored

    @property
    def episode_id(self) -> str:
        """Which planned episode this is of, for counting it once: its task and attempt."""
        return episode_id(self.task_id, self.attempt)
