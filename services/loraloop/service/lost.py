"""Episodes the broker lost, queued again each time a worker connects to it.

Kombu's Redis transport takes a message off the queue with BRPOP and writes it to its unacked hash only
afterwards, in a second command (kombu/transport/redis.py: `_brpop_read`, then `QoS.append`). A broker that
goes away between the two (a Redis restart; a worker killed at that moment) loses the message: it is in no
queue and in no unacked hash, so neither the visibility timeout nor a restart brings it back, and its job never
ends (celery/kombu#305, open; the suite's Redis-restart test stalled at 4/6 on loaded machines this way). Celery
cannot tell such a message from one never sent, but the job book can: every running job's planned episodes are
booked with their specs, and an episode neither counted nor in the broker is lost. `RequeueLost` is a step of
Celery's own consumer blueprint, so it runs after every (re)connection, the moment after which a loss can have
happened; one worker at a time looks (Redis lock), and an episode queued twice is still stored and counted once.
"""

from __future__ import annotations

import json

import redis
from celery import Celery, bootsteps

from loraloop.logs import get_logger
from loraloop.service.book import JobBook, job_book
from loraloop.service.jobs import send_episodes
from loraloop.settings import get_settings

LOCK = "loraloop:requeue-lost"


def queued_ids(channel, queues: list[str]) -> set[str]:
    """The task ids of every message the broker holds for these queues: waiting (in each priority's list; kombu
    names them with `_q_for_pri`) or delivered and not yet acked. Read in one transaction, so a message moving
    from a queue to the unacked hash meanwhile is seen in one of them."""
    lists = [channel._q_for_pri(queue, pri) for queue in queues for pri in channel.priority_steps]
    with channel.conn_or_acquire() as client:
        pipe = client.pipeline(transaction=True)
        for key in lists:
            pipe.lrange(key, 0, -1)
        pipe.hvals(channel.unacked_key)
        *waiting, unacked = pipe.execute()
    messages = [json.loads(raw) for raws in waiting for raw in raws] + [json.loads(raw)[0] for raw in unacked]
    return {message["headers"]["id"] for message in messages if message.get("headers", {}).get("id")}


def requeue_lost(app: Celery, channel, queues: list[str], book: JobBook) -> dict[str, list[str]]:
    """Queue again each running job's episodes that are neither counted nor held by the broker; return their
    keys by run id. The broker is read before the book: an episode counted in between is not queued again.
    Another worker looking at the same time (the lock is held) leaves this one nothing to do."""
    lock = book.redis.lock(LOCK, timeout=60)
    if not lock.acquire(blocking=False):
        return {}
    try:
        present = queued_ids(channel, queues)
        lost = {run_id: specs for run_id in book.running_jobs() if (specs := book.unfinished(run_id, present))}
        for specs in lost.values():
            send_episodes(app, specs)
    finally:
        lock.release()
    return {run_id: sorted(specs) for run_id, specs in lost.items()}


class RequeueLost(bootsteps.StartStopStep):
    """A consumer step: after each connection to the broker, queue again the episodes it lost."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def start(self, c) -> None:
        """Look for lost episodes; a failure is logged, never raised (the worker goes on consuming)."""
        log = get_logger("loraloop.service")
        try:
            queues = [queue.name for queue in c.task_consumer.queues]
            lost = requeue_lost(c.app, c.connection.default_channel, queues, job_book(get_settings().broker_url))
        except (redis.RedisError, c.connection_errors) as exc:
            log.warning("lost episodes not looked for: %s", exc)
            return
        for run_id, keys in lost.items():
            log.warning("queued again %d episode(s) of run %s the broker lost: %s", len(keys), run_id, ", ".join(keys))
