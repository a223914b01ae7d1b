"""GET /api/health: no token needed, so that probes and load balancers reach it."""

from __future__ import annotations

from fastapi import APIRouter

from loraloop.taskserver.deps import EpisodesDep
from loraloop.taskserver.models import Health

router = APIRouter(tags=["health"])


@router.get("/api/health", response_model=Health)
async def health(episodes: EpisodesDep) -> Health:
    """Liveness and how many episodes are open (across replicas when shared). On the event loop: it needs
    no worker thread, so it answers while slow steps hold them."""
    return episodes.health()
