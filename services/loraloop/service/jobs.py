"""Rollout jobs on the Celery service: plan, submit, follow, cancel; their book is kept in Redis.

A job is a run: one Celery task per episode, whose task id is the episode's store key, so a
job submitted again with the same run id resumes (stored episodes are skipped) and a
redelivered episode never writes a second copy. Workers report each finished episode into
the job's counters, which the API, `loraloop jobs` and the Prometheus metrics read.
"""
from __future__ import annotations

import json
import re
import time
from functools import lru_cache
from typing import Any

import redis
from pydantic import BaseModel, Field, field_validator

from loraloop.errors import ConfigError, LoraloopError, ServiceUnavailable
from loraloop.rollout.experiments import get_experiment
from loraloop.rollout.sampler import EpisodeSpec, new_run_id, plan_rollout
from loraloop.settings import Settings
from loraloop.store import open_store
from loraloop.store.trajectories import episode_key
from loraloop.tasks.registry import load_registry

NS = "loraloop"
RUN_ID = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
LATENCY_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class UnknownJob(LoraloopError):
    """No job with this run id in the book."""


class JobRequest(BaseModel):
    """What `loraloop rollout` and `POST /api/jobs` take; flag names as in the HALO seed."""

    experiment: str
    task_registry: str = "configs/tasks/os"
    subset: str | None = None
    sample_size: int | None = Field(None, ge=1)
    rollouts_per_task: int = Field(1, ge=1, le=1000)
    seed: int = 42
    task_seed: int = 123
    temperature: float | None = Field(None, ge=0.0, le=5.0)
    run_id: str | None = None
    model: str | None = None

    @field_validator("run_id")
    @classmethod
    def _safe_run_id(cls, value: str | None) -> str | None:
        if value is not None and not RUN_ID.match(value):
            raise ValueError(f"run_id {value!r} may hold only letters, digits, '.', '_' and '-'")
        return value


@lru_cache(maxsize=8)
def job_book(url: str) -> "JobBook":
    """This process's job book for a broker URL (one Redis connection pool, reused by every episode)."""
    return JobBook(url)


def plan_job(request: JobRequest, settings: Settings) -> tuple[str, list[EpisodeSpec]]:
    """The run id and every episode of the job; bad experiment, registry or subset fail naming it."""
    experiment = get_experiment(settings.experiments_path, request.experiment)
    registry = load_registry(request.task_registry)
    run_id = request.run_id or new_run_id()
    specs = plan_rollout(registry, request.task_registry, experiment, run_id=run_id, subset=request.subset,
                         sample_size=request.sample_size, rollouts_per_task=request.rollouts_per_task,
                         seed=request.seed, task_seed=request.task_seed, temperature=request.temperature,
                         model=request.model)
    return run_id, specs


def spec_key(spec: EpisodeSpec) -> str:
    """The episode's store key, which is also its Celery task id (idempotent)."""
    return episode_key(spec.mode, spec.run_id, spec.task_id, spec.attempt)


def pending_specs(specs: list[EpisodeSpec], settings: Settings) -> list[EpisodeSpec]:
    """The episodes not yet in the store: resubmitting a run plays only what is missing."""
    store = open_store(settings=settings)
    return [spec for spec in specs if not store.exists(spec_key(spec))]


class JobBook:
    """Jobs and their progress in Redis, shared by the API, the CLI and every worker."""

    def __init__(self, url: str) -> None:
        if not url.startswith(("redis://", "rediss://")):
            raise ConfigError(f"jobs need a Redis broker (LORALOOP_BROKER_URL=redis://…), got {url!r}")
        self.url = url
        self.redis = redis.Redis.from_url(url, socket_connect_timeout=3, decode_responses=True)

    def _job(self, run_id: str) -> str:
        return f"{NS}:job:{run_id}"

    def create(self, run_id: str, mode: str, request: dict, specs: list[EpisodeSpec], skipped: int,
               store_url: str = "") -> None:
        """Record a submitted job: its request, episode keys and counters at zero."""
        now = time.time()
        pipe = self.redis.pipeline()
        pipe.delete(self._job(run_id), f"{self._job(run_id)}:keys", f"{self._job(run_id)}:errors")
        pipe.hset(self._job(run_id), mapping={
            "run_id": run_id, "mode": mode, "request": json.dumps(request), "store_url": store_url,
            "total": len(specs), "skipped": skipped, "done": 0, "solved": 0, "failed": 0,
            "submitted_at": now, "updated_at": now, "state": "queued" if specs else "done"})
        if specs:
            pipe.rpush(f"{self._job(run_id)}:keys", *(spec_key(s) for s in specs))
        pipe.zadd(f"{NS}:jobs", {run_id: now})
        pipe.execute()

    def record(self, run_id: str, summary: dict) -> None:
        """Count one finished episode (called by the worker that ran it) and feed the metrics."""
        cause = summary.get("status") or "error"
        failed = bool(summary.get("error")) or cause in ("env_error", "service_error", "crash")
        pipe = self.redis.pipeline()
        job = self._job(run_id)
        pipe.hincrby(job, "done", 1)
        pipe.hincrby(job, "solved", int(bool(summary.get("success"))))
        if failed:
            pipe.hincrby(job, "failed", 1)
            pipe.hincrby(f"{NS}:metrics:failures", cause, 1)
            pipe.lpush(f"{job}:errors", f"{summary.get('task_id')}: {summary.get('error') or cause}")
            pipe.ltrim(f"{job}:errors", 0, 19)
        pipe.hset(job, "updated_at", time.time())
        pipe.hincrby(f"{NS}:metrics:episodes", cause, 1)
        for name, values in (("step", summary.get("step_ms", [])), ("model", summary.get("model_ms", []))):
            for ms in values:
                seconds = (ms or 0.0) / 1000
                bucket = next((str(b) for b in LATENCY_BUCKETS_S if seconds <= b), "+Inf")
                pipe.hincrby(f"{NS}:metrics:{name}_latency", bucket, 1)
                pipe.hincrbyfloat(f"{NS}:metrics:{name}_latency", "sum", seconds)
        pipe.execute()

    def cancelled(self, run_id: str) -> bool:
        """True once the job was cancelled: queued episodes are skipped, running ones stop."""
        return self.redis.hget(self._job(run_id), "state") == "cancelled"

    def cancel(self, run_id: str) -> list[str]:
        """Mark the job cancelled and return its episode task ids (for revoking)."""
        if not self.redis.exists(self._job(run_id)):
            raise UnknownJob(f"unknown job {run_id!r}")
        self.redis.hset(self._job(run_id), mapping={"state": "cancelled", "updated_at": time.time()})
        return self.redis.lrange(f"{self._job(run_id)}:keys", 0, -1)

    def status(self, run_id: str) -> dict[str, Any]:
        """The job's progress: done, solved, failed, success rate so far, episodes per minute."""
        raw = self.redis.hgetall(self._job(run_id))
        if not raw:
            raise UnknownJob(f"unknown job {run_id!r}")
        total, done = int(raw["total"]), int(raw.get("done", 0))
        solved, failed = int(raw.get("solved", 0)), int(raw.get("failed", 0))
        state = raw["state"]
        if state != "cancelled":
            state = "done" if done >= total else ("running" if done else "queued")
        elapsed = max(float(raw["updated_at"]) - float(raw["submitted_at"]), 1e-6)
        return {"run_id": run_id, "mode": raw["mode"], "state": state, "total": total, "done": done,
                "solved": solved, "failed": failed, "skipped": int(raw.get("skipped", 0)),
                "success_rate": round(solved / done, 4) if done else None,
                "episodes_per_min": round(done / elapsed * 60, 2) if done else 0.0,
                "submitted_at": float(raw["submitted_at"]), "request": json.loads(raw["request"]),
                "recent_errors": self.redis.lrange(f"{self._job(run_id)}:errors", 0, 4),
                "store_url": raw.get("store_url", "")}

    def list(self, limit: int = 50) -> list[dict[str, Any]]:
        """The latest jobs, newest first."""
        return [self.status(run_id) for run_id in self.redis.zrevrange(f"{NS}:jobs", 0, limit - 1)
                if self.redis.exists(self._job(run_id))]

    def metrics(self) -> dict[str, dict[str, float]]:
        """Raw counters for the Prometheus exposition."""
        return {name: {k: float(v) for k, v in self.redis.hgetall(f"{NS}:metrics:{name}").items()}
                for name in ("episodes", "failures", "step_latency", "model_latency")}

    def queue_depth(self, queue: str = "celery") -> int:
        """Episodes waiting in the broker's queue."""
        return int(self.redis.llen(queue))


def enqueue(specs: list[EpisodeSpec], settings: Settings, book: JobBook,
            request: dict | None = None) -> tuple[str, list[EpisodeSpec]]:
    """Book the run and queue its episodes not yet stored, one Celery task each; return the run id and those."""
    from loraloop.service.celery_app import bound_task

    run_id, mode = (specs[0].run_id, specs[0].mode) if specs else (new_run_id(), "empty")
    todo = pending_specs(specs, settings)
    try:
        book.create(run_id, mode, request or {}, todo, skipped=len(specs) - len(todo), store_url=settings.store_url)
    except redis.RedisError as exc:
        raise ServiceUnavailable(f"broker unreachable at {book.url} ({type(exc).__name__})") from exc
    task = bound_task()
    for spec in todo:
        task.apply_async(args=(spec.to_dict(),), task_id=spec_key(spec))
    return run_id, todo


def submit(request: JobRequest, settings: Settings, book: JobBook) -> dict[str, Any]:
    """Plan the job, check its servers, queue it; return its status."""
    from loraloop.rollout.preflight import check_servers

    _, specs = plan_job(request, settings)
    check_servers(specs, settings)
    run_id, _ = enqueue(specs, settings, book, request.model_dump())
    return book.status(run_id)


def cancel(run_id: str, book: JobBook) -> dict[str, Any]:
    """Cancel a job: revoke its queued episodes; running ones end at their next step, stored."""
    from loraloop.service.celery_app import app

    keys = book.cancel(run_id)
    if keys:
        app.control.revoke(keys)
    return book.status(run_id)
