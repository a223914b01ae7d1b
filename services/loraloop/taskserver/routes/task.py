"""GET /api/task/info: what this server serves (bearer token when LORALOOP_TASK_SERVER_TOKEN is set)."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from loraloop.taskserver.deps import EpisodesDep, authorised
from loraloop.taskserver.models import TaskInfo

router = APIRouter(tags=["task"], dependencies=[Depends(authorised)])


@router.get("/api/task/info", response_model=TaskInfo)
async def info(episodes: EpisodesDep) -> TaskInfo:
    """Its tasks, the longest episode and the environment kinds."""
    return episodes.info()
