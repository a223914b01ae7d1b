"""OpenAI's routes, proxied to vLLM with the caller's session key: `POST /v1/chat/completions` (also
`/chat/completions`, AReaL's path), streamed or whole, tool calls unchanged, each completion recorded in the session
before the reply (or the stream's last event) reaches the client; `GET /v1/models` (also `/models`, a session or the
admin key). Errors in OpenAI's shape (`openai_error`), which OpenAI clients read and raise."""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from loraloop import http_guards
from loraloop.errors import SessionError
from loraloop.serve.gateway.deps import GatewayDep, bearer
from loraloop.serve.gateway.recording import StreamedCompletion, completion_of, for_client, upstream_body

NOT_SAMPLING = ("messages", "model", "stream", "stream_options", "logprobs", "top_logprobs", "return_token_ids")
router = APIRouter(tags=["openai"])


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


@router.get("/v1/models")
@router.get("/models")
async def models(request: Request, gateway: GatewayDep) -> dict:
    """vLLM's served models (a session key or the admin key)."""
    key = bearer(request)
    if not secrets.compare_digest(key.encode(), gateway.admin_key.encode()):
        await gateway.off_loop(gateway.sessions.open, key)
    return await gateway.upstream.models()


@router.post("/v1/chat/completions")
@router.post("/chat/completions")
async def chat_completions(request: Request, gateway: GatewayDep) -> Response:
    """Proxy a chat completion to vLLM and record it in the caller's session."""
    key = bearer(request)
    await gateway.off_loop(gateway.sessions.open, key)
    body = chat_body(await request.body())
    adapter = await gateway.upstream.check(body["model"])
    sampling = {k: v for k, v in body.items() if k not in NOT_SAMPLING}
    started = time.perf_counter()

    async def record(completion) -> None:
        await gateway.off_loop(
            gateway.sessions.record,
            key,
            completion,
            body["messages"],
            sampling,
            adapter,
            (time.perf_counter() - started) * 1000,
        )

    sent = gateway.upstream.client.build_request(
        "POST",
        "/chat/completions",
        content=orjson.dumps(upstream_body(body)),
        headers={"Content-Type": "application/json"},
    )
    try:
        reply = await gateway.upstream.client.send(sent, stream=body.get("stream", False))
    except httpx.HTTPError as exc:
        raise SessionError(f"vLLM unreachable at {gateway.upstream.url} ({type(exc).__name__})", 502) from exc
    if reply.status_code != 200:
        return await refused(reply, gateway.upstream.url)
    if not body.get("stream"):
        payload = orjson.loads(reply.content)
        await record(completion_of(payload))
        return Response(orjson.dumps(for_client(payload, body)), media_type="application/json")
    return StreamingResponse(relay(reply, body, record), media_type="text/event-stream")


async def refused(reply: httpx.Response, url: str) -> Response:
    """vLLM's refusal passed on (a 4xx as it is, a 5xx as 502); nothing is recorded."""
    content = await reply.aread()
    await reply.aclose()
    if reply.status_code < 500:
        return Response(content, status_code=reply.status_code, media_type="application/json")
    raise SessionError(f"vLLM at {url} failed: HTTP {reply.status_code}", 502)


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
