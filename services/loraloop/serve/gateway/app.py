"""The gateway's HTTP API: OpenAI-compatible chat completions proxied to vLLM, and AReaL's session routes.

- `POST /v1/chat/completions` (also `/chat/completions`, AReaL's path), session key: proxied to vLLM
  (the base model or a served adapter version), streamed or whole, tool calls unchanged; the
  completion is recorded in the session (serve/gateway/sessions.py) before the reply (or the
  stream's last event) reaches the client, so a reward set right after it finds it.
- `GET /v1/models` (also `/models`), a session or admin key: vLLM's served models.
- `POST /rl/start_session` (admin key), `/rl/set_reward` and `/rl/end_session` (session key):
  AReaL's paths and bodies; loraloop also takes `experiment` and `run_id` at start.
- `GET /health`: open sessions.

OpenAI routes answer errors in OpenAI's shape ({"error": {"message", "type", "code"}}), the
session routes in FastAPI's ({"detail": …}); a body over LORALOOP_GATEWAY_MAX_BODY_BYTES gets 413. Redis or the
S3 store unreachable: 503 naming it, with Retry-After (a session whose episode could not be written stays open).

The app is built in the form of service/api/ (FastAPI's full-stack template): models.py, one router per resource in
routes/, deps.py for what they depend on, and state.py for the one piece of state they share.
"""

from __future__ import annotations

from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from redis import RedisError

from loraloop import http_guards
from loraloop.errors import SessionError, StoreUnavailable, without_credentials
from loraloop.rollout.states import EpisodeStates, sweeping
from loraloop.serve.gateway.routes import health, openai, sessions
from loraloop.serve.gateway.state import Gateway
from loraloop.settings import Settings


def create_app(settings: Settings, states: EpisodeStates | None = None) -> FastAPI:
    """The gateway app over the settings' vLLM, store and broker (Redis sessions when LORALOOP_BROKER_URL is set)."""
    gateway = Gateway(settings, states)

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        with sweeping(gateway.expire, settings.gateway_session_timeout_s, gateway.log, "gateway-expiry"):
            yield
        await gateway.upstream.aclose()
        if gateway.in_memory:  # nothing outlives this process: store what is open
            gateway.sessions.interrupt_all()

    app = FastAPI(title="loraloop gateway", lifespan=lifespan)
    app.state.gateway = gateway
    http_guards.install(app, settings.gateway_max_body_bytes, "LORALOOP_GATEWAY_MAX_BODY_BYTES")
    http_guards.unavailable(app, (RedisError,), "Redis (the sessions' state)", without_credentials(settings.broker_url))
    http_guards.unavailable(app, (StoreUnavailable,), "the store (the sessions' episodes)", gateway.store.shown)

    @app.exception_handler(SessionError)
    async def session_error(request: Request, exc: SessionError) -> JSONResponse:
        if request.url.path.startswith("/rl/"):
            return JSONResponse({"detail": str(exc)}, status_code=exc.status)
        return openai.openai_error(exc)

    app.include_router(health.router)
    app.include_router(sessions.router)
    app.include_router(openai.router)
    return app
