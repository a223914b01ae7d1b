"""/api/episode: start, step and cancel episodes (AReaL's TaskServerWorkflow calls), with the bearer token when
LORALOOP_TASK_SERVER_TOKEN is set; start and step, the slow calls, also under the server's in-flight cap."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from loraloop.taskserver.deps import EpisodesDep, authorised, in_flight
from loraloop.taskserver.models import (
    ERRORS,
    Cancelled,
    CancelRequest,
    EpisodeReply,
    StartRequest,
    StepRequest,
)

router = APIRouter(prefix="/api/episode", tags=["episodes"], dependencies=[Depends(authorised)])


@router.post("/start", response_model=EpisodeReply, responses=ERRORS, dependencies=[Depends(in_flight)])
def start(request: StartRequest, episodes: EpisodesDep) -> EpisodeReply:
    """Start an episode for a sample (its index string, or its position as an int): the opening chat, and the
    tools when the protocol is `tools`. Everything the request names is checked before an environment is made."""
    return episodes.start(request)


@router.post("/step", response_model=EpisodeReply, responses=ERRORS, dependencies=[Depends(in_flight)])
def step(request: StepRequest, episodes: EpisodesDep) -> EpisodeReply:
    """Apply one action; at the end the observation is null and the info carries the outcome. The store
    unreachable when the episode ends: 503, and this step sent again stores it (the action is not played twice)."""
    return episodes.step(request)


@router.post("/cancel", response_model=Cancelled, responses={k: ERRORS[k] for k in (400, 401, 404, 409, 503)})
def cancel(request: CancelRequest, episodes: EpisodesDep) -> Cancelled:
    """End an episode early, store its trajectory and release its environment."""
    return episodes.cancel(request)
