"""GET /health: no key needed, so that probes reach it."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.concurrency import run_in_threadpool

from loraloop.serve.gateway.deps import GatewayDep

router = APIRouter(tags=["health"])


@router.get("/health")
async def health(gateway: GatewayDep) -> dict:
    """Liveness and how many sessions are open (across replicas when shared)."""
    return {"status": "healthy", "open_sessions": await run_in_threadpool(gateway.sessions.count)}
