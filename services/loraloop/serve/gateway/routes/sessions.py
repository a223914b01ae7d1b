"""AReaL's session routes: /rl/start_session (admin key), /rl/set_reward and /rl/end_session (the session's key).
Errors in FastAPI's shape ({"detail": …}), as AReaL reads them."""

from __future__ import annotations

import secrets

from fastapi import APIRouter, Request

from loraloop.errors import SessionError
from loraloop.serve.gateway.deps import GatewayDep, admin, bearer
from loraloop.serve.gateway.models import EndSession, SetReward, StartSession

router = APIRouter(prefix="/rl", tags=["sessions"])


@router.post("/start_session")
def start_session(body: StartSession, request: Request, gateway: GatewayDep) -> dict:
    """Open a session for a task (admin key): its id and the key its calls carry."""
    admin(request, gateway)
    if body.api_key is not None and secrets.compare_digest(body.api_key.encode(), gateway.admin_key.encode()):
        raise SessionError("api_key: the admin key cannot be a session's key")
    started = gateway.sessions.start(body.task_id, body.experiment, body.run_id, body.api_key)
    gateway.log.info("session started", fields={"session": started["session_id"], "task": body.task_id})
    return started


@router.post("/set_reward")
def set_reward(body: SetReward, request: Request, gateway: GatewayDep) -> dict:
    """Reward a completion of the session (the last one when interaction_id is null)."""
    return gateway.sessions.reward(bearer(request), body.reward, body.interaction_id)


@router.post("/end_session")
def end_session(request: Request, gateway: GatewayDep, _body: EndSession | None = None) -> dict:
    """Store the session as one episode and close it."""
    ended = gateway.sessions.end(bearer(request))
    gateway.log.info("session ended (stored)", fields={"session": ended["session_id"], "key": ended["episode_key"]})
    return ended
