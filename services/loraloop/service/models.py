"""The shapes jobs travel in: what a job asks for, its status, the API's health and error bodies.

The CLI, both job books, the clients and the API all use these, so a status read from memory,
Redis or HTTP is one type, and the OpenAPI schema shows every field the routes return.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from loraloop.defaults import SEED, TASK_REGISTRY, TASK_SEED
from loraloop.http_guards import RequestBody
from loraloop.input_rules import MODEL_NAME, Identifier, PathText, Seed

JobState = Literal["queued", "running", "done", "cancelled"]
FINAL_STATES = ("done", "cancelled")


class JobRequest(RequestBody):
    """What `loraloop rollout` and `POST /api/jobs` take; flag names as in the HALO seed."""

    experiment: Identifier = Field(description="experiment name in the experiments file (configs/experiments.yaml)")
    task_registry: PathText = Field(
        TASK_REGISTRY, max_length=4096, description="registry file or folder, as the planning process sees it"
    )
    subset: PathText | None = Field(
        None,
        max_length=16384,
        description="split, category, label or id:<task index>; terms joined by +, alternatives by ,",
    )
    sample_size: int | None = Field(None, ge=1, description="tasks drawn with `seed` (default: all)")
    rollouts_per_task: int = Field(1, ge=1, le=1000)
    seed: Seed = Field(SEED, description="task sampling seed")
    task_seed: Seed = Field(TASK_SEED, description="base of per-rollout seeds: task_seed + task_index*1000 + attempt")
    temperature: float | None = Field(None, ge=0.0, le=5.0, description="default: the experiment's")
    run_id: Identifier | None = Field(
        None, description="default: a new one; an existing one resumes (stored ones skipped)"
    )
    model: str | None = Field(
        None,
        max_length=256,
        pattern=f"^{MODEL_NAME.pattern}$",
        description="served model name, overriding the experiment's",
    )


class JobStatus(BaseModel):
    """A job's progress, the same from the embedded book, the Redis book and the API."""

    run_id: str
    mode: str = Field(description="the experiment: the trajectory folder under trajectories/")
    state: JobState
    total: int = Field(description="episodes queued (stored ones not counted)")
    done: int
    solved: int
    failed: int = Field(
        description="episodes that ended in an error that is not the agent's (environment, model "
        "server, crash); an episode the agent failed is done, not failed"
    )
    failures: dict[str, int] = Field(
        default_factory=dict,
        description="failed episodes by cause: env_error, "
        "service_error (model server down or failing), model_timeout, model_error, crash",
    )
    skipped: int = Field(description="episodes already stored when the job was submitted")
    unplayable: int = Field(0, description="episodes the policy could not play (a task without a teacher solution)")
    store_waits: int = Field(
        0,
        description="episodes whose trajectory was stored only after waiting out a store "
        "outage (LORALOOP_STORE_RETRY_S)",
    )
    retries: int = Field(
        0,
        description="episodes played again from the start, unstored, after the model server "
        "failed them (LORALOOP_EPISODE_RETRIES)",
    )
    success_rate: float | None = Field(description="solved / done so far; null before the first episode ends")
    episodes_per_min: float
    submitted_at: float = Field(description="Unix time")
    request: JobRequest | None = Field(None, description="what was submitted; null for episodes planned in code")
    recent_errors: list[str] = Field(
        default_factory=list, description="the latest errors and unplayable tasks, newest first"
    )
    store_url: str = Field(
        "",
        description="the store the trajectories are in, as a client may see it: a folder by its "
        "last part (file://…/store), a bucket with its S3 endpoint; never a host "
        "path or credentials",
    )


class Health(BaseModel):
    """GET /api/health: the broker answers."""

    status: Literal["healthy"] = "healthy"
    broker: str = Field(description="broker URL without its credentials")
    queue_depth: int = Field(description="episodes waiting in the broker's queue")


class ErrorMessage(BaseModel):
    """Every refused request: one line naming the field, value or server at fault."""

    detail: str
