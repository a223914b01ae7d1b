"""What every loraloop HTTP API puts in front of its routes, so that hostile input gets a 4xx, never a 500.

- `BodyLimit`: a request body over the cap (declared or streamed) is refused with 413 before any
  route reads it, so a 10 MB action is neither run, nor kept in Redis, nor written to a trajectory; a
  JSON body nested deeper than input_rules.MAX_JSON_DEPTH is refused with 422 before anything parses it.
- `RequestBody`: the base of every request model. Text JSON can carry but UTF-8 cannot (a lone
  surrogate such as "\\ud800") and numbers JSON has no word for (NaN, Infinity) are refused with 422,
  naming the field, before they reach a store or a log line that would fail to encode them.
- `install`: adds both, and answers validation errors with the field, the kind and the message only;
  FastAPI's default echoes the input, and an echoed NaN or surrogate is itself a 500.
- `unavailable`: a dependency that does not answer (Redis, the S3 store) is a 503 naming it, with Retry-After,
  not a 500.
- `token_ok`, `require_token`: the bearer-token check of every API that has an optional token (jobs API, viewer,
  Task Server), and its 401.
- `InFlightCap`: a cap for slow routes (an episode's start and step): past its limit a call gets 429
  at once, so slow calls never take every worker thread and health and other episodes stay answered.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials
from pydantic import BaseModel, model_validator

from loraloop.input_rules import json_depth_problem


def printable(value: Any) -> Any:
    """A value fit for a JSON reply: lone surrogates escaped, non-finite floats as their names."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def unencodable(value: Any, path: str) -> str | None:
    """Where in a parsed JSON body a lone surrogate or a non-finite number sits, said as a sentence; else None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return (
                f"{path or 'body'}: character {exc.start} is a lone surrogate ({printable(value[exc.start])}), "
                "not UTF-8 text"
            )
    elif isinstance(value, float) and not math.isfinite(value):
        return f"{path or 'body'}: {value} is not a number JSON allows"
    elif isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{printable(key)}" if path else printable(key)
            problem = unencodable(key, f"{where} (the key)") or unencodable(item, where)
            if problem:
                return problem
    elif isinstance(value, list):
        for index, item in enumerate(value):
            problem = unencodable(item, f"{path}[{index}]")
            if problem:
                return problem
    return None


class RequestBody(BaseModel):
    """Base of every request model: refuses text UTF-8 cannot encode and non-finite numbers, naming the field."""

    @model_validator(mode="before")
    @classmethod
    def _encodable(cls, data: Any) -> Any:
        problem = unencodable(data, "")
        if problem:
            raise ValueError(problem)
        return data


class BodyLimit:
    """ASGI middleware: a request body longer than `max_bytes` gets 413, a JSON body nested too deep 422 (a form's
    body is not JSON and is not checked); the body is read once, then replayed."""

    def __init__(self, app, max_bytes: int, setting: str = "LORALOOP_API_MAX_BODY_BYTES") -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.setting = setting

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length", b"0")
        if not declared.isdigit() or int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send, declared.decode("latin-1"))
            return
        body, more = bytearray(), True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away: let the app see it
                await self.app(scope, _replay(bytes(body), message, receive), send)
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                await self._refuse(scope, receive, send, f"more than {self.max_bytes}")
                return
        kind = dict(scope["headers"]).get(b"content-type", b"")
        problem = (
            None
            if kind.startswith((b"application/x-www-form-urlencoded", b"multipart/"))
            else json_depth_problem(bytes(body))
        )
        if problem:
            await JSONResponse({"detail": problem}, status_code=422)(scope, receive, send)
            return
        await self.app(scope, _replay(bytes(body), None, receive), send)

    async def _refuse(self, scope, receive, send, size: str) -> None:
        response = JSONResponse(
            {"detail": f"request body of {size} bytes is over the limit of {self.max_bytes} bytes ({self.setting})"},
            status_code=413,
            headers={"Connection": "close"},
        )
        await response(scope, receive, send)


def _replay(body: bytes, after: dict | None, receive):
    """A `receive` that hands the app the body read so far in one message, then `after` (the message that ended the
    read early), then the server's own messages: a streamed reply still learns when its client goes away."""
    sent = False

    async def replay() -> dict:
        nonlocal sent, after
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        if after is not None:
            message, after = after, None
            return message
        return await receive()

    return replay


async def validation_error(_request: Request, exc: Exception) -> JSONResponse:
    """422 naming each field at fault (FastAPI's shape, less the echoed input). Registered for
    RequestValidationError alone (Starlette types a handler by Exception)."""
    if not isinstance(exc, RequestValidationError):
        raise exc
    return JSONResponse(
        {
            "detail": [
                {"type": error["type"], "loc": [printable(p) for p in error["loc"]], "msg": printable(error["msg"])}
                for error in exc.errors()
            ]
        },
        status_code=422,
    )


def unavailable(app: FastAPI, errors: tuple[type[Exception], ...], what: str, url: str, retry_after_s: int = 5) -> None:
    """Answer an exception of `errors` (the dependency `what` at `url`, shown without credentials, does not answer)
    with 503 and Retry-After, so a client waits and tries again instead of taking a bare 500 as its own fault."""

    async def down(_request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse(
            {"detail": f"{what} unreachable at {url} ({type(exc).__name__}): try again in {retry_after_s} s"},
            status_code=503,
            headers={"Retry-After": str(retry_after_s)},
        )

    for error in errors:
        app.add_exception_handler(error, down)


def token_ok(token: str, credentials: HTTPAuthorizationCredentials | None) -> bool:
    """True when the API has no token (empty) or the request's bearer token is it (compared in constant time)."""
    return not token or bool(credentials and secrets.compare_digest(credentials.credentials.encode(), token.encode()))


def require_token(token: str, credentials: HTTPAuthorizationCredentials | None, setting: str) -> None:
    """Refuse (401, with WWW-Authenticate) a call whose bearer token is not `token`, naming the `setting` that holds
    it; an API without a token (empty) lets every call through."""
    if not token_ok(token, credentials):
        raise HTTPException(401, f"missing or wrong bearer token ({setting})", headers={"WWW-Authenticate": "Bearer"})


class InFlightCap:
    """At most `limit` calls of the routes it guards run at once; past it, 429 at once (`held`).

    Entered from an async dependency, on the event loop, before the route takes a worker thread, so the count
    needs no lock. Starlette gives sync routes a pool of 40 threads: a limit under that keeps threads free
    for health checks and quick calls however many slow ones a client sends.
    """

    def __init__(self, limit: int, what: str) -> None:
        self.limit = limit
        self.what = what
        self.running = 0

    @asynccontextmanager
    async def held(self) -> AsyncIterator[None]:
        """One call counted while it runs; 429 with Retry-After when `limit` are running already."""
        if self.running >= self.limit:
            raise HTTPException(
                429,
                f"{self.running} {self.what} already in flight, the most this server runs at "
                "once (LORALOOP_API_MAX_IN_FLIGHT): try again shortly",
                headers={"Retry-After": "1"},
            )
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1


def install(app: FastAPI, max_body_bytes: int, setting: str = "LORALOOP_API_MAX_BODY_BYTES") -> None:
    """Put the body cap (`setting` names where it is set) and the safe validation-error reply in front of an
    app's routes."""
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes, setting=setting)
    app.add_exception_handler(RequestValidationError, validation_error)
