"""The job book: each job's request, episode keys and counters.

`JobBook` keeps it in Redis, shared by the API, the CLI and every worker; `MemoryBook` keeps it in
this process for the embedded default. Both count a finished episode the same way and report one
`JobStatus`. Neither knows Celery: the worker's task records into the book, never the reverse.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from functools import lru_cache
from typing import Any, cast

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry
from redis.typing import EncodableT

from loraloop.broker import BROKER_OUTAGE_S, is_redis
from loraloop.errors import ConfigError, LoraloopError, ServiceUnavailable, without_credentials
from loraloop.rollout.summary import EpisodeSummary, episode_id
from loraloop.service.models import JobRequest, JobStatus

NS = "loraloop"
LATENCY_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
FAILURE_CAUSES = ("env_error", "service_error", "model_timeout", "model_error", "crash")
KEPT_ERRORS = 20
# Count an episode once: its id joins the job's counted set, and only then do the counters move, in one script,
# so a redelivered episode (a worker killed after counting, an ack lost in a broker restart) or a command retried
# after a dropped connection is not counted twice. Returns done and total, or -1s when it was counted already.
RECORD_ONCE = """
if redis.call('SADD', KEYS[2], ARGV[1]) == 0 then return {-1, -1} end
for i = 2, #ARGV, 2 do redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1]) end
return {tonumber(redis.call('HGET', KEYS[1], 'done')), tonumber(redis.call('HGET', KEYS[1], 'total') or -1)}
"""


class UnknownJob(LoraloopError):
    """No job with this run id in the book."""


class JobRunning(LoraloopError):
    """A run submitted again while its episodes are still queued or running (the API answers 409)."""


def running(fields: Mapping[str, Any]) -> bool:
    """True while a booked job has episodes queued or running: not cancelled, fewer done than planned."""
    return fields["state"] != "cancelled" and int(fields.get("done", 0)) < int(fields["total"])


def refuse_running(run_id: str, fields: Mapping[str, Any]) -> None:
    """Raise JobRunning for a job still running: submitting it again would queue its unstored episodes twice."""
    if running(fields):
        raise JobRunning(
            f"job {run_id!r} is still running ({fields.get('done', 0)}/{fields['total']} done): "
            "follow it, cancel it, or submit it again once it ends (stored episodes are skipped)"
        )


def failed(summary: EpisodeSummary) -> bool:
    """True when an episode ended in an error of the environment, a server or the code (not the agent's)."""
    return bool(summary.error) or summary.status in FAILURE_CAUSES


def unplayable(summary: EpisodeSummary) -> bool:
    """True for an episode the policy could not play (the teacher has no solution for its task)."""
    return summary.status == "skipped"


def waited(summary: EpisodeSummary) -> bool:
    """True for an episode whose trajectory was stored only after waiting out a store outage."""
    return bool(summary.store_wait_s)


def notes(summary: EpisodeSummary) -> list[str]:
    """The lines a finished episode leaves in its job's recent errors, oldest first: its error or why it was
    unplayable, then how long it waited for the store."""
    lines = [error_line(summary)] if failed(summary) or unplayable(summary) else []
    if waited(summary):
        lines.append(f"{summary.task_id}: stored after waiting {summary.store_wait_s:.0f} s for the store")
    return lines


def error_line(summary: EpisodeSummary) -> str:
    """The one line a failed or unplayable episode leaves in its job's recent errors."""
    if unplayable(summary):
        return f"skipped {summary.task_id}: {summary.reason}"
    return f"{summary.task_id}: {summary.error or summary.status or 'error'}"


def counts(summary: EpisodeSummary) -> dict[str, int]:
    """What one finished episode adds to its job's counters, the same for both books."""
    added = {
        "done": 1,
        "solved": int(summary.success),
        "unplayable": int(unplayable(summary)),
        "store_waits": int(waited(summary)),
    }
    if failed(summary):
        added.update({"failed": 1, f"failed:{cause(summary)}": 1})
    return added


def cause(summary: EpisodeSummary) -> str:
    """What a failed episode failed of: its status when it names a cause, else `error`."""
    status = summary.status
    return status if status in FAILURE_CAUSES else "error"


def job_status(run_id: str, fields: Mapping[str, Any], recent_errors: list[str]) -> JobStatus:
    """A job's status from its booked fields, the same arithmetic for both books."""
    total, done = int(fields["total"]), int(fields.get("done", 0))
    solved = int(fields.get("solved", 0))
    state = fields["state"]
    if state != "cancelled":
        state = "done" if done >= total else ("running" if done else "queued")
    elapsed = max(float(fields["updated_at"]) - float(fields["submitted_at"]), 1e-6)
    request = fields.get("request") or None  # JSON text in Redis; "" (or an old "{}") when planned in code
    if isinstance(request, str):
        request = json.loads(request) or None
    return JobStatus(
        run_id=run_id,
        mode=fields["mode"],
        state=state,
        total=total,
        done=done,
        solved=solved,
        failed=int(fields.get("failed", 0)),
        skipped=int(fields.get("skipped", 0)),
        failures={
            key.removeprefix("failed:"): int(value)
            for key, value in sorted(fields.items())
            if key.startswith("failed:") and int(value)
        },
        unplayable=int(fields.get("unplayable", 0)),
        store_waits=int(fields.get("store_waits", 0)),
        retries=int(fields.get("retries", 0)),
        success_rate=round(solved / done, 4) if done else None,
        episodes_per_min=round(done / elapsed * 60, 2) if done else 0.0,
        submitted_at=float(fields["submitted_at"]),
        request=request,
        recent_errors=recent_errors,
        store_url=fields.get("store_url", ""),
    )


def new_job(
    run_id: str, mode: str, request: JobRequest | None, keys: list[str], skipped: int, store_url: str
) -> dict[str, str | int | float]:
    """The booked fields of a job just submitted: its request, counters at zero."""
    now = time.time()
    return {
        "run_id": run_id,
        "mode": mode,
        "request": request.model_dump_json() if request else "",
        "store_url": store_url,
        "total": len(keys),
        "skipped": skipped,
        "done": 0,
        "solved": 0,
        "failed": 0,
        "unplayable": 0,
        "store_waits": 0,
        "retries": 0,
        "submitted_at": now,
        "updated_at": now,
        "state": "queued" if keys else "done",
    }


def text_map(reply: object) -> dict[str, str]:
    """A Redis hash reply as the str → str it is: the book's client decodes every reply (decode_responses=True),
    which redis-py's types do not follow."""
    return cast("dict[str, str]", reply)


def texts(reply: object) -> list[str]:
    """A Redis list or set reply as the str it holds (see text_map)."""
    return cast("list[str]", reply)


@lru_cache(maxsize=8)
def job_book(url: str) -> JobBook:
    """This process's job book for a broker URL (one Redis connection pool, reused by every episode). Workers and
    clients following a job wait out a broker restart (BROKER_OUTAGE_S) instead of losing an episode's count."""
    return JobBook(url, outage_s=BROKER_OUTAGE_S)


class JobBook:
    """Jobs and their progress in Redis, shared by the API, the CLI and every worker."""

    def __init__(self, url: str, outage_s: float = 0) -> None:
        """A book in the Redis at `url`. With `outage_s`, a command that finds the server gone is tried again with
        backoff for about that long (redis-py's Retry); without, it fails at once (the API answers 503)."""
        if not is_redis(url):
            raise ConfigError(f"jobs need a Redis broker (LORALOOP_BROKER_URL=redis://…), got {url!r}")
        self.url = url
        retry = Retry(ExponentialBackoff(cap=2.0, base=0.1), retries=int(outage_s / 2) + 4) if outage_s else None
        self.redis = redis.Redis.from_url(url, socket_connect_timeout=3, decode_responses=True, retry=retry)
        self._record_once = self.redis.register_script(RECORD_ONCE)

    def _job(self, run_id: str) -> str:
        return f"{NS}:job:{run_id}"

    def create(
        self, run_id: str, mode: str, request: JobRequest | None, keys: list[str], skipped: int, store_url: str = ""
    ) -> None:
        """Record a submitted job: its request, episode keys and counters at zero.

        A run still running is refused (JobRunning); a run booked before with nothing left to play keeps its
        book as it was. Checked and written in one Redis transaction, so two submissions cannot both pass.
        """
        job = self._job(run_id)
        try:
            with self.redis.pipeline() as pipe:
                while True:
                    try:
                        pipe.watch(job)
                        booked = text_map(pipe.hgetall(job))
                        if booked:
                            refuse_running(run_id, booked)
                            if not keys:
                                return
                        pipe.multi()
                        pipe.delete(job, f"{job}:keys", f"{job}:errors", f"{job}:counted", f"{job}:specs")
                        booked_now = new_job(run_id, mode, request, keys, skipped, store_url)
                        fields: dict[EncodableT, EncodableT] = {k: v for k, v in booked_now.items()}  # hset's type
                        pipe.hset(job, mapping=fields)
                        if keys:
                            pipe.rpush(f"{job}:keys", *keys)
                        pipe.zadd(f"{NS}:jobs", {run_id: time.time()})
                        pipe.execute()
                        return
                    except redis.WatchError:  # another submission of this run came first: look again
                        continue
        except redis.RedisError as exc:
            raise ServiceUnavailable(
                f"broker unreachable at {without_credentials(self.url)} ({type(exc).__name__})"
            ) from exc

    def record(self, run_id: str, summary: EpisodeSummary) -> bool:
        """Count one finished episode (called by the worker that ran it) and feed the metrics; True when it was
        the job's last. An episode counted before (redelivered) changes nothing."""
        job = self._job(run_id)
        added = [str(item) for pair in counts(summary).items() for item in pair]
        done, total = self._record_once(keys=[job, f"{job}:counted"], args=[summary.episode_id, *added])
        if done < 0:
            return False
        pipe = self.redis.pipeline()
        if failed(summary):
            pipe.hincrby(f"{NS}:metrics:failures", cause(summary), 1)
        if lines := notes(summary):
            self._keep_errors(pipe, job, lines)
        pipe.hset(job, "updated_at", time.time())
        pipe.hincrby(f"{NS}:metrics:episodes", summary.status or "error", 1)
        for name, values in (("step", summary.step_ms), ("model", summary.model_ms)):
            for ms in values:
                seconds = (ms or 0.0) / 1000
                bucket = next((str(b) for b in LATENCY_BUCKETS_S if seconds <= b), "+Inf")
                pipe.hincrby(f"{NS}:metrics:{name}_latency", bucket, 1)
                pipe.hincrbyfloat(f"{NS}:metrics:{name}_latency", "sum", seconds)
        pipe.execute()
        return done == total

    def retried(self, run_id: str, line: str) -> None:
        """Count an episode that will be played again (the model server or the environment failed it) and keep
        why."""
        job = self._job(run_id)
        pipe = self.redis.pipeline()
        pipe.hincrby(job, "retries", 1)
        self._keep_errors(pipe, job, [line])
        pipe.execute()

    @staticmethod
    def _keep_errors(pipe, job: str, lines: list[str]) -> None:
        """Add lines to the job's recent errors (newest first), keeping the last KEPT_ERRORS."""
        pipe.lpush(f"{job}:errors", *lines)
        pipe.ltrim(f"{job}:errors", 0, KEPT_ERRORS - 1)

    def cancelled(self, run_id: str) -> bool:
        """True once the job was cancelled: queued episodes are skipped, running ones stop."""
        return self.redis.hget(self._job(run_id), "state") == "cancelled"

    def cancel(self, run_id: str) -> list[str]:
        """Mark a running job cancelled and return its episode task ids (for revoking); a job that has ended
        stays as it ended (nothing to revoke)."""
        fields = text_map(self.redis.hgetall(self._job(run_id)))
        if not fields:
            raise UnknownJob(f"unknown job {run_id!r}")
        if not running(fields):
            return []
        self.redis.hset(self._job(run_id), mapping={"state": "cancelled", "updated_at": time.time()})
        return self.keys(run_id)

    def keep_specs(self, run_id: str, specs: dict[str, dict]) -> None:
        """Keep the specs of a job's queued episodes by key, once they are all sent, so an episode the broker
        loses can be queued again (service/lost.py)."""
        if specs:
            self.redis.hset(
                f"{self._job(run_id)}:specs", mapping={key: json.dumps(spec) for key, spec in specs.items()}
            )

    def running_jobs(self) -> list[str]:
        """The run ids of the booked jobs that still have episodes queued or running."""
        run_ids = texts(self.redis.zrange(f"{NS}:jobs", 0, -1))
        pipe = self.redis.pipeline()
        for run_id in run_ids:
            pipe.hgetall(self._job(run_id))
        return [run_id for run_id, fields in zip(run_ids, pipe.execute()) if fields and running(fields)]

    def unfinished(self, run_id: str, present: set[str]) -> dict[str, dict]:
        """The specs, by key, of the job's episodes that are neither counted nor among the `present` task ids
        (what the broker holds): the episodes it lost. The counted set is read after `present` was."""
        job = self._job(run_id)
        specs = {
            key: json.loads(spec)
            for key, spec in text_map(self.redis.hgetall(f"{job}:specs")).items()
            if key not in present
        }
        counted = self.redis.smembers(f"{job}:counted")
        return {key: spec for key, spec in specs.items() if episode_id(spec["task_id"], spec["attempt"]) not in counted}

    def keys(self, run_id: str) -> list[str]:
        """The job's episode keys (its Celery task ids), in planned order."""
        return texts(self.redis.lrange(f"{self._job(run_id)}:keys", 0, -1))

    def status(self, run_id: str) -> JobStatus:
        """The job's progress: done, solved, failed, success rate so far, episodes per minute."""
        raw = text_map(self.redis.hgetall(self._job(run_id)))
        if not raw:
            raise UnknownJob(f"unknown job {run_id!r}")
        return job_status(run_id, raw, texts(self.redis.lrange(f"{self._job(run_id)}:errors", 0, 4)))

    def list(self, limit: int = 50) -> list[JobStatus]:
        """The latest jobs, newest first."""
        return [
            self.status(run_id)
            for run_id in texts(self.redis.zrevrange(f"{NS}:jobs", 0, limit - 1))
            if self.redis.exists(self._job(run_id))
        ]

    def metrics(self) -> dict[str, dict[str, float]]:
        """Raw counters for the Prometheus exposition."""
        return {
            name: {k: float(v) for k, v in text_map(self.redis.hgetall(f"{NS}:metrics:{name}")).items()}
            for name in ("episodes", "failures", "step_latency", "model_latency")
        }

    def queue_depth(self, queue: str = "celery") -> int:
        """Episodes waiting in the broker's queue."""
        return int(self.redis.llen(queue))


class MemoryBook:
    """Jobs of this process only (the embedded default): the same counters, kept in a dict."""

    def __init__(self) -> None:
        self._jobs: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def _get(self, run_id: str) -> dict[str, Any]:
        if run_id not in self._jobs:
            raise UnknownJob(
                f"unknown job {run_id!r} (without LORALOOP_API_URL or LORALOOP_BROKER_URL, "
                "jobs live in the process that runs them)"
            )
        return self._jobs[run_id]

    def create(
        self, run_id: str, mode: str, request: JobRequest | None, keys: list[str], skipped: int, store_url: str = ""
    ) -> None:
        """Record a submitted job: its request, episode keys and counters at zero (the same rules as JobBook's)."""
        with self._lock:
            booked = self._jobs.get(run_id)
            if booked:
                refuse_running(run_id, booked)
                if not keys:
                    return
            self._jobs[run_id] = {
                **new_job(run_id, mode, request, keys, skipped, store_url),
                "keys": list(keys),
                "errors": [],
                "counted": set(),
            }

    def record(self, run_id: str, summary: EpisodeSummary) -> bool:
        """Count one finished episode; True when it was the job's last."""
        with self._lock:
            job = self._get(run_id)
            if summary.episode_id in job["counted"]:
                return False
            job["counted"].add(summary.episode_id)
            for field, added in counts(summary).items():
                job[field] = job.get(field, 0) + added
            job["errors"] = [*reversed(notes(summary)), *job["errors"]][:KEPT_ERRORS]
            job["updated_at"] = time.time()
            return job["done"] == job["total"]

    def retried(self, run_id: str, line: str) -> None:
        """Count an episode that will be played again (the model server or the environment failed it) and keep
        why."""
        with self._lock:
            job = self._get(run_id)
            job["retries"] += 1
            job["errors"] = [line, *job["errors"]][:KEPT_ERRORS]

    def cancelled(self, run_id: str) -> bool:
        """True once the job was cancelled."""
        with self._lock:
            return self._get(run_id)["state"] == "cancelled"

    def cancel(self, run_id: str) -> list[str]:
        """Mark a running job cancelled and return its episode keys; a job that has ended stays as it ended."""
        with self._lock:
            job = self._get(run_id)
            if not running(job):
                return []
            job.update(state="cancelled", updated_at=time.time())
            return list(job["keys"])

    def status(self, run_id: str) -> JobStatus:
        """The job's progress."""
        with self._lock:
            job = self._get(run_id)
            return job_status(run_id, job, job["errors"][:5])

    def list(self, limit: int = 50) -> list[JobStatus]:
        """This process's jobs, newest first."""
        with self._lock:
            newest = sorted(self._jobs, key=lambda run_id: self._jobs[run_id]["submitted_at"], reverse=True)
        return [self.status(run_id) for run_id in newest[:limit]]
