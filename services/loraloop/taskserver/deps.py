"""What the Task Server's routes depend on: its episodes (one `Episodes` per app) and the bearer token."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from loraloop import http_guards
from loraloop.taskserver.episodes import Episodes

bearer = HTTPBearer(auto_error=False, description="LORALOOP_TASK_SERVER_TOKEN; needed only when the server has one")


def get_episodes(request: Request) -> Episodes:
    """The app's episodes."""
    return request.app.state.episodes


EpisodesDep = Annotated[Episodes, Depends(get_episodes)]


async def authorised(
    episodes: EpisodesDep, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> None:
    """With LORALOOP_TASK_SERVER_TOKEN set, refuse (401) a call without `Authorization: Bearer <that token>`.
    On the event loop, like the in-flight cap: a refused call never takes a worker thread."""
    http_guards.require_token(episodes.settings.task_server_token, credentials, "LORALOOP_TASK_SERVER_TOKEN")


async def in_flight(request: Request) -> AsyncIterator[None]:
    """The app's cap on episode starts and steps running at once (http_guards.InFlightCap, LORALOOP_API_MAX_IN_FLIGHT):
    past it, 429 at once. After `authorised` on each route, so a call without the token never counts."""
    async with request.app.state.in_flight.held():
        yield
