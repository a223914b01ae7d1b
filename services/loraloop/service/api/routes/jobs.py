"""/api/jobs: submit, list, follow and cancel rollout jobs (bearer token when LORALOOP_API_TOKEN is set)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from loraloop.service import jobs
from loraloop.service.api.deps import BookDep, QueueDep, SettingsDep, authorised
from loraloop.service.models import ErrorMessage, JobRequest, JobStatus

UNKNOWN: dict[int | str, dict[str, Any]] = {404: {"model": ErrorMessage, "description": "no job with this run id"}}

router = APIRouter(
    prefix="/api/jobs",
    tags=["jobs"],
    dependencies=[Depends(authorised)],
    responses={
        401: {"model": ErrorMessage, "description": "missing or wrong bearer token"},
        503: {"model": ErrorMessage, "description": "the broker or a server the job needs does not answer"},
    },
)


@router.post(
    "",
    status_code=201,
    response_model=JobStatus,
    responses={
        400: {
            "model": ErrorMessage,
            "description": "unknown experiment, registry or subset, or a registry outside LORALOOP_TASK_ROOTS",
        },
        409: {"model": ErrorMessage, "description": "this run id is still running"},
        413: {"model": ErrorMessage, "description": "the body is over LORALOOP_API_MAX_BODY_BYTES"},
    },
)
def submit_job(request: JobRequest, settings: SettingsDep, book: BookDep, queue: QueueDep) -> JobStatus:
    """Plan a rollout and queue its episodes; a run id that has ended resumes (stored ones skipped), one still
    running is refused (409). The registry must lie under LORALOOP_TASK_ROOTS."""
    jobs.check_task_root(request.task_registry, settings)
    return jobs.submit(request, settings, book, queue)


@router.get("", response_model=list[JobStatus])
def list_jobs(book: BookDep, limit: Annotated[int, Query(ge=1, le=1000)] = 50) -> list[JobStatus]:
    """The latest jobs, newest first."""
    return book.list(limit)


@router.get("/{run_id}", response_model=JobStatus, responses=UNKNOWN)
def job_status(run_id: str, book: BookDep) -> JobStatus:
    """A job's progress: done, solved, failed, success rate, episodes per minute."""
    return book.status(run_id)


@router.post("/{run_id}/cancel", response_model=JobStatus, responses=UNKNOWN)
def cancel_job(run_id: str, book: BookDep, queue: QueueDep) -> JobStatus:
    """Stop a job: queued episodes are dropped, running ones end at their next step and are stored."""
    return jobs.cancel(run_id, book, queue)
