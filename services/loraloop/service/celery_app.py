"""The worker's Celery application (`celery -A loraloop.service.celery_app`): one task per episode.

The task plays its episode with the job book of the worker's broker (`loraloop.rollout.runner.play`),
the code the embedded default runs in its threads. Queueing and revoking live in
`loraloop.service.jobs`, which receives a Celery app; nothing here imports them back.
"""

from __future__ import annotations

from loraloop.rollout.runner import play
from loraloop.rollout.sampler import EpisodeSpec
from loraloop.service.book import job_book
from loraloop.service.jobs import EPISODE_TASK
from loraloop.service.lost import RequeueLost
from loraloop.service.queue import celery_for
from loraloop.settings import get_settings

app = celery_for(get_settings())
app.steps["consumer"].add(RequeueLost)


@app.task(name=EPISODE_TASK, acks_late=True)
def run_episode_task(spec: dict) -> dict:
    """Celery entry point: run the episode (unless its job was cancelled) and report it to the job's book; its
    summary travels back as JSON (EpisodeSummary's fields)."""
    settings = get_settings()
    return play(EpisodeSpec(**spec), settings, job_book(settings.broker_url)).model_dump()
