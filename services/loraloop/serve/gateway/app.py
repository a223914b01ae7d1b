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
session routes in FastAPI's ({"detail": …}); a body over LORALOOP_GATEWAY_MAX_BODY_BYTES gets 413.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import orjson
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import Field
from redis import RedisError
from starlette.concurrency import run_in_threadpool

from loraloop import http_guards
from loraloop.broker import without_credentials
from loraloop.errors import ConfigError, SessionError
from loraloop.http_guards import RequestBody
from loraloop.input_rules import Identifier, Reward
from loraloop.logs import get_logger
from loraloop.rollout.states import EpisodeStates, MemoryEpisodeStates, sweeping
from loraloop.serve.gateway.recording import StreamedCompletion, completion_of, for_client, upstream_body
from loraloop.serve.gateway.sessions import Sessions
from loraloop.serve.gateway.upstream import Upstream
from loraloop.settings import Settings
from loraloop.store import open_store

NOT_SAMPLING = ("messages", "model", "stream", "stream_options", "logprobs", "top_logprobs", "return_token_ids")


class StartSession(RequestBody):
    """POST /rl/start_session (AReaL's body, plus loraloop's experiment and run_id)."""

    task_id: str = Field(
        min_length=1, max_length=256, description="the task the session plays; its episodes are grouped by it"
    )
    api_key: str | None = Field(
        None,
        min_length=16,
        max_length=256,
        pattern=r"^[\x21-\x7e]+$",
        description="a previous session's key: that session is stored and a new one starts "
        "with the same key (AReaL's refresh); visible ASCII only, as a key sent "
        "in an Authorization header must be",
    )
    experiment: Identifier | None = Field(
        None, description="the episode's mode (trajectories/<experiment>/); default LORALOOP_GATEWAY_EXPERIMENT"
    )
    run_id: Identifier | None = Field(None, description="the run folder (default: today, UTC)")


class SetReward(RequestBody):
    """POST /rl/set_reward: a completion's reward (the last completion's when interaction_id is null)."""

    reward: Reward = Field(description="finite, at most 1e6 either way (input_rules.MAX_REWARD)")
    interaction_id: str | None = Field(None, max_length=256, description="a completion's id (chatcmpl-…)")


class EndSession(RequestBody):
    """POST /rl/end_session (an empty object)."""


def bearer(request: Request) -> str:
    """The key an `Authorization: Bearer <key>` header carries; 401 without one."""
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise SessionError("missing API key: send `Authorization: Bearer <key>`", 401)
    return key.strip()


def openai_error(exc: SessionError) -> JSONResponse:
    """An error in OpenAI's shape, which OpenAI clients read and raise."""
    kinds = {401: "authentication_error", 404: "not_found_error", 409: "conflict_error", 502: "upstream_error"}
    return JSONResponse(
        {"error": {"message": str(exc), "type": kinds.get(exc.status, "invalid_request_error"), "code": exc.status}},
        status_code=exc.status,
    )


def chat_body(raw: bytes) -> dict[str, Any]:
    """The chat request as a dict, or a 400 naming what is wrong with it (the gateway proxies the rest as is)."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise SessionError(f"the body is not JSON ({exc})") from exc
    if not isinstance(body, dict):
        raise SessionError(f"the body must be a JSON object, got {type(body).__name__}")
    problem = http_guards.unencodable(body, "")
    if problem:
        raise SessionError(problem)
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise SessionError("field 'model': a served model name is required (GET /v1/models lists them)")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) and "role" in m for m in messages):
        raise SessionError("field 'messages': a non-empty list of chat messages, each with a 'role', is required")
    if body.get("n", 1) != 1:
        raise SessionError(f"field 'n': the gateway records one completion per call, so n must be 1, got {body['n']!r}")
    if not isinstance(body.get("stream", False), bool):
        raise SessionError("field 'stream' must be true or false")
    return body


def create_app(settings: Settings, states: EpisodeStates | None = None) -> FastAPI:
    """The gateway app over the settings' vLLM, store and broker (Redis sessions when LORALOOP_BROKER_URL is set)."""
    if not settings.gateway_admin_key:
        raise ConfigError("LORALOOP_GATEWAY_ADMIN_KEY is empty: set the key that starts sessions")
    admin_key = settings.gateway_admin_key
    store = open_store(settings=settings)
    sessions = Sessions(settings, store, states)
    upstream = Upstream(settings, store)
    log = get_logger("loraloop.gateway")
    in_memory = isinstance(sessions.states, MemoryEpisodeStates)

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        def expire() -> None:
            for session_id in sessions.expire():
                log.info("session expired (stored)", fields={"session": session_id})

        with sweeping(expire, settings.gateway_session_timeout_s, log, "gateway-expiry"):
            yield
        await upstream.aclose()
        if in_memory:  # nothing outlives this process: store what is open
            sessions.interrupt_all()

    async def off_loop(fn, *args):
        """A session call: in this process's memory it is quick and runs here; on Redis it waits on the network (and
        on a session's lock), so it runs in a worker thread and the event loop goes on serving."""
        return fn(*args) if in_memory else await run_in_threadpool(fn, *args)

    app = FastAPI(title="loraloop gateway", lifespan=lifespan)
    http_guards.install(app, settings.gateway_max_body_bytes, "LORALOOP_GATEWAY_MAX_BODY_BYTES")
    http_guards.unavailable(app, (RedisError,), "Redis (the sessions' state)", without_credentials(settings.broker_url))

    @app.exception_handler(SessionError)
    async def session_error(request: Request, exc: SessionError) -> JSONResponse:
        if request.url.path.startswith("/rl/"):
            return JSONResponse({"detail": str(exc)}, status_code=exc.status)
        return openai_error(exc)

    def admin(request: Request) -> None:
        if not secrets.compare_digest(bearer(request).encode(), admin_key.encode()):
            raise SessionError("invalid admin key (LORALOOP_GATEWAY_ADMIN_KEY)", 401)

    @app.get("/health")
    async def health() -> dict:
        """Liveness and how many sessions are open (across replicas when shared)."""
        return {"status": "healthy", "open_sessions": await run_in_threadpool(sessions.count)}

    @app.post("/rl/start_session")
    def start_session(body: StartSession, request: Request) -> dict:
        """Open a session for a task (admin key): its id and the key its calls carry."""
        admin(request)
        if body.api_key is not None and secrets.compare_digest(body.api_key.encode(), admin_key.encode()):
            raise SessionError("api_key: the admin key cannot be a session's key")
        started = sessions.start(body.task_id, body.experiment, body.run_id, body.api_key)
        log.info("session started", fields={"session": started["session_id"], "task": body.task_id})
        return started

    @app.post("/rl/set_reward")
    def set_reward(body: SetReward, request: Request) -> dict:
        """Reward a completion of the session (the last one when interaction_id is null)."""
        return sessions.reward(bearer(request), body.reward, body.interaction_id)

    @app.post("/rl/end_session")
    def end_session(request: Request, _body: EndSession | None = None) -> dict:
        """Store the session as one episode and close it."""
        ended = sessions.end(bearer(request))
        log.info("session ended (stored)", fields={"session": ended["session_id"], "key": ended["episode_key"]})
        return ended

    @app.get("/v1/models")
    @app.get("/models")
    async def models(request: Request) -> dict:
        """vLLM's served models (a session key or the admin key)."""
        key = bearer(request)
        if not secrets.compare_digest(key.encode(), admin_key.encode()):
            await off_loop(sessions.open, key)
        return await upstream.models()

    @app.post("/v1/chat/completions")
    @app.post("/chat/completions")
    async def chat_completions(request: Request) -> Response:
        """Proxy a chat completion to vLLM and record it in the caller's session."""
        key = bearer(request)
        await off_loop(sessions.open, key)
        body = chat_body(await request.body())
        adapter = await upstream.check(body["model"])
        sampling = {k: v for k, v in body.items() if k not in NOT_SAMPLING}
        started = time.perf_counter()

        async def record(completion) -> None:
            await off_loop(
                sessions.record,
                key,
                completion,
                body["messages"],
                sampling,
                adapter,
                (time.perf_counter() - started) * 1000,
            )

        sent = upstream.client.build_request(
            "POST",
            "/chat/completions",
            content=orjson.dumps(upstream_body(body)),
            headers={"Content-Type": "application/json"},
        )
        try:
            reply = await upstream.client.send(sent, stream=body.get("stream", False))
        except httpx.HTTPError as exc:
            raise SessionError(f"vLLM unreachable at {upstream.url} ({type(exc).__name__})", 502) from exc
        if reply.status_code != 200:
            return await refused(reply)
        if not body.get("stream"):
            payload = orjson.loads(reply.content)
            await record(completion_of(payload))
            return Response(orjson.dumps(for_client(payload, body)), media_type="application/json")
        return StreamingResponse(relay(reply, body, record), media_type="text/event-stream")

    async def refused(reply: httpx.Response) -> Response:
        """vLLM's refusal passed on (a 4xx as it is, a 5xx as 502); nothing is recorded."""
        content = await reply.aread()
        await reply.aclose()
        if reply.status_code < 500:
            return Response(content, status_code=reply.status_code, media_type="application/json")
        raise SessionError(f"vLLM at {upstream.url} failed: HTTP {reply.status_code}", 502)

    async def relay(reply: httpx.Response, body: dict, record) -> AsyncIterator[bytes]:
        """vLLM's stream to the client, chunk by chunk; the completion is recorded before the final [DONE]."""
        streamed = StreamedCompletion()
        try:
            async for line in reply.aiter_lines():
                if not line.startswith("data: "):
                    continue
                data = line[6:]
                if data.strip() == "[DONE]":
                    if streamed.completion is not None and streamed.completion.finish_reason:
                        try:
                            await record(streamed.completion)
                        except SessionError as exc:  # the session ended during the call: say so in the stream
                            refusal = {"error": {"message": str(exc), "code": exc.status}}
                            yield b"data: " + orjson.dumps(refusal) + b"\n\n"
                    yield b"data: [DONE]\n\n"
                    continue
                chunk = orjson.loads(data)
                if "error" not in chunk:
                    streamed.add(chunk)
                    chunk = for_client(chunk, body)
                yield b"data: " + orjson.dumps(chunk) + b"\n\n"
        finally:
            await reply.aclose()

    return app
