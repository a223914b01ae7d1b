"""The Task Server API that AReaL's TaskServerWorkflow speaks, over any task registry and env kind.

Each episode runs as an EpisodeSession (rollout/session.py), so what the Task Server stores is
what a rollout worker stores. Episode state lives where every replica reaches it (Redis when
LORALOOP_BROKER_URL is set, memory otherwise). A kind whose environment another process can attach
to (the shell: its container, with the shell's state saved after each command) lets a call land on
any replica, or a restarted one; a kind whose environment lives in one process (the web: a browser
context) is served by the replica that started the episode, and a call reaching another replica
is a 409 that says so. Every episode served is written to the trajectory store when it ends:
completed, cancelled, expired, failed at start, or interrupted (open when this process stopped, in
memory mode or a browser episode). Errors follow FastAPI's {"detail": …} convention; Redis or the S3
store unreachable is a 503 naming it, with Retry-After. An episode whose write fails stays open, its
environment kept, and is stored once by the next call that ends it (a retried step, a cancel, the
idle reaper of any replica).

The app is built in the form of service/api/ (FastAPI's full-stack template): models.py, one router per resource in
routes/, deps.py for what they depend on, and episodes.py for the one piece of state they share.
"""

from __future__ import annotations

from contextlib import asynccontextmanager

from fastapi import FastAPI
from redis import RedisError

from loraloop import http_guards
from loraloop.errors import StoreUnavailable, without_credentials
from loraloop.rollout.states import EpisodeStates, sweeping
from loraloop.settings import Settings
from loraloop.task_registry import Registry
from loraloop.taskserver.episodes import Episodes, open_states
from loraloop.taskserver.routes import episodes, health, task

__all__ = ["create_app", "open_states"]  # open_states: the tests share one Redis state between two apps


def create_app(
    registry: Registry,
    task_name: str,
    settings: Settings,
    idle_timeout_s: float = 300.0,
    run_id: str | None = None,
    states: EpisodeStates | None = None,
) -> FastAPI:
    """The Task Server API app for one registry; trajectories go to trajectories/<task_name>/<run_id>/. Idle
    episodes are ended and stored after `idle_timeout_s`; at shutdown each open one is stored or left for a
    replica (Episodes.shut_down)."""
    served = Episodes(registry, task_name, settings, idle_timeout_s, run_id, states)

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        with sweeping(served.expire, idle_timeout_s, served.log, "taskserver-expiry"):
            yield
        served.shut_down()

    app = FastAPI(title=f"loraloop task server: {task_name}", lifespan=lifespan)
    app.state.episodes = served
    app.state.in_flight = http_guards.InFlightCap(settings.api_max_in_flight, "episode starts and steps")
    http_guards.install(app, settings.api_max_body_bytes)
    http_guards.unavailable(app, (RedisError,), "Redis (the episodes' state)", without_credentials(settings.broker_url))
    http_guards.unavailable(app, (StoreUnavailable,), "the store (the episodes' trajectories)", served.store.shown)
    app.include_router(health.router)
    app.include_router(task.router)
    app.include_router(episodes.router)
    return app
