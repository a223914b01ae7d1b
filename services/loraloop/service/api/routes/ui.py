"""/ui: the trajectory viewer, server-rendered HTML from the store (nothing loaded from a CDN).

Runs → a run's episodes (filtered by task, outcome and model, paged, from the run's index object) → one
episode's steps (observation, model output, parsed action and its source, error, reward, screenshot), and two
episodes side by side. With LORALOOP_API_TOKEN set, a page needs the token: as a bearer header, or once in
the login form, which sets a cookie holding a digest of it (never the token itself). Past LOGIN_TRIES wrong tokens
in LOGIN_WINDOW_S from one address the form answers 429 with Retry-After; every page carries HARDENING's headers
(no script, no framing, no referrer).
"""

from __future__ import annotations

import hashlib
import math
import secrets
import threading
import time
from collections import deque
from pathlib import Path
from typing import Annotated
from urllib.parse import parse_qs, urlencode

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.security import HTTPAuthorizationCredentials
from jinja2 import Environment, FileSystemLoader, select_autoescape

from loraloop.http_guards import token_ok
from loraloop.input_rules import identifier_problem, store_key_problem
from loraloop.service.api.deps import SettingsDep, bearer
from loraloop.store import browse, open_store
from loraloop.store.backends import Store
from loraloop.store.trajectories import PREFIX

PAGE = 50
COOKIE = "loraloop_ui"
LOGIN_TRIES = 5  # wrong tokens an address may send in LOGIN_WINDOW_S before the form answers 429
LOGIN_WINDOW_S = 60.0
HARDENING = {  # the pages run no script, load nothing from elsewhere and are never framed
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; "
    "frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}
templates = Environment(
    loader=FileSystemLoader(Path(__file__).resolve().parent.parent / "templates"),
    autoescape=select_autoescape(["html"]),
)  # observations hold web pages' HTML: escaped


class LoginNeeded(Exception):
    """A viewer page asked for without the API's token; answered with a redirect to the login form."""

    def __init__(self, next_url: str) -> None:
        super().__init__(next_url)
        self.next_url = next_url


class LoginAttempts:
    """Wrong tokens per client address over the last `window_s` (this process's; each replica counts its own)."""

    def __init__(self, tries: int = LOGIN_TRIES, window_s: float = LOGIN_WINDOW_S) -> None:
        self.tries = tries
        self.window_s = window_s
        self.failures: dict[str, deque[float]] = {}
        self.guard = threading.Lock()

    def wait_s(self, who: str) -> int:
        """Seconds before `who` may try again (0: now); addresses whose failures have aged out are forgotten."""
        now = time.monotonic()
        with self.guard:
            for address in [a for a, times in self.failures.items() if now - times[-1] >= self.window_s]:
                del self.failures[address]
            times = self.failures.get(who)
            if times is None or len(times) < self.tries:
                return 0
            return max(1, math.ceil(times[0] + self.window_s - now))

    def failed(self, who: str) -> None:
        """Count a wrong token from `who` (only the latest `tries` are kept)."""
        with self.guard:
            self.failures.setdefault(who, deque(maxlen=self.tries)).append(time.monotonic())


async def hardening_headers(request: Request, call_next) -> Response:
    """HTTP middleware: every /ui response carries HARDENING's headers."""
    response = await call_next(request)
    if request.url.path.startswith("/ui"):
        response.headers.update(HARDENING)
    return response


def cookie_value(token: str) -> str:
    """What the login cookie holds: a digest of the token, so the cookie never carries the token itself."""
    return hashlib.sha256(f"loraloop-ui\0{token}".encode()).hexdigest()


def viewer_allowed(
    request: Request,
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> None:
    """With LORALOOP_API_TOKEN set, let through a request with the bearer token or the login cookie; send a
    browser without either to the login form."""
    if token_ok(settings.api_token, credentials) or secrets.compare_digest(
        request.cookies.get(COOKIE, "").encode(), cookie_value(settings.api_token).encode()
    ):
        return
    raise LoginNeeded(str(request.url.path) + (f"?{request.url.query}" if request.url.query else ""))


def viewer_store(settings: SettingsDep) -> Store:
    """The store the viewer reads (the API's settings)."""
    return open_store(settings=settings)


StoreDep = Annotated[Store, Depends(viewer_store)]
router = APIRouter(tags=["viewer"], include_in_schema=False)
pages = APIRouter(prefix="/ui", dependencies=[Depends(viewer_allowed)])  # every page but the login form


def html(template: str, **values) -> HTMLResponse:
    """A page rendered from templates/<template>."""
    return HTMLResponse(templates.get_template(template).render(**values))


def paged(items: list, page: int) -> tuple[list, int]:
    """The items of a 1-based page and the number of pages (at least 1)."""
    return items[(page - 1) * PAGE : page * PAGE], max(1, math.ceil(len(items) / PAGE))


def stored_key(key: str, suffix: str) -> str:
    """A key the viewer may read: under trajectories/, ending in `suffix`, no `..`; else 404 (nothing outside
    the store's trajectories is ever read through the viewer). A key no file could have (NUL, a part over 255
    bytes) is a 400 naming the rule."""
    problem = store_key_problem(key)
    if problem:
        raise HTTPException(400, problem)
    parts = key.split("/")
    if parts[0] != PREFIX or ".." in parts or "" in parts[1:] or "\\" in key or not key.endswith(suffix):
        raise HTTPException(404, f"no episode file {key!r}")
    return key


class EpisodeView:
    """One episode as the pages show it: parsed, or corrupt with the reason."""

    def __init__(self, store: Store, key: str) -> None:
        self.key = stored_key(key, ".jsonl")
        try:
            data = store.get_bytes(self.key)
        except FileNotFoundError:
            raise HTTPException(404, f"no episode {key!r}") from None
        self.entry, self.episode = browse.describe(self.key, data)
        self.corrupt = self.entry.corrupt


@pages.get("", response_class=HTMLResponse)
def runs_page(store: StoreDep, mode: str = "", page: Annotated[int, Query(ge=1)] = 1) -> HTMLResponse:
    """Every run in the store, newest first; with `mode`, that experiment's only."""
    runs = browse.runs(store)
    chosen = [r for r in runs if not mode or r.mode == mode]
    shown, count = paged(chosen, page)
    return html(
        "runs.html",
        title="Runs",
        runs=shown,
        total=len(runs),
        shown=len(chosen),
        page=page,
        pages=count,
        store_url=store.shown,
        mode=mode,
        modes=sorted({r.mode for r in runs}),
        query=urlencode({"mode": mode}),
    )


@pages.get("/runs/{mode}/{run_id}", response_class=HTMLResponse)
def run_page(
    mode: str,
    run_id: str,
    store: StoreDep,
    task: str = "",
    outcome: str = "",
    model: str = "",
    page: Annotated[int, Query(ge=1)] = 1,
) -> HTMLResponse:
    """A run's episodes, filtered by task (part of its id), outcome and model, 50 a page. A mode or run id that
    no run could be stored under (`..`, a slash…) is a 404 like an unknown run, and nothing is read for it."""
    if identifier_problem(mode, "mode") or identifier_problem(run_id, "run_id"):
        raise HTTPException(404, f"no run {mode!r}/{run_id!r} in the store")
    entries = browse.run_index(store, mode, run_id)
    if not entries:
        raise HTTPException(404, f"no run {mode}/{run_id} in the store")
    chosen = browse.select(entries, task=task, outcome=outcome, model=model)
    shown, count = paged(chosen, page)
    return html(
        "run.html",
        title=f"{mode} / {run_id}",
        episodes=shown,
        total=len(entries),
        shown=len(chosen),
        solved=sum(e.success for e in chosen),
        task=task,
        outcome=outcome,
        model=model,
        page=page,
        pages=count,
        models=sorted({e.model for e in entries if e.model}),
        query=urlencode({"task": task, "outcome": outcome, "model": model}),
    )


@pages.get("/episode", response_class=HTMLResponse)
def episode_page(key: str, store: StoreDep) -> HTMLResponse:
    """One episode, step by step."""
    view = EpisodeView(store, key)
    return html("episode.html", title=f"Episode {view.entry.task_id} #{view.entry.attempt}", view=view)


@pages.get("/compare", response_class=HTMLResponse)
def compare_page(store: StoreDep, key: Annotated[list[str], Query()]) -> HTMLResponse:
    """Two episodes side by side (usually two attempts of the same task)."""
    if len(key) != 2:
        raise HTTPException(400, f"compare takes exactly two episodes (key=…&key=…), got {len(key)}")
    views = [EpisodeView(store, k) for k in key]
    return html("compare.html", title="Two episodes side by side", views=views)


@pages.get("/file")
def file(key: str, store: StoreDep) -> Response:
    """A screenshot stored beside an episode."""
    try:
        return Response(store.get_bytes(stored_key(key, ".png")), media_type="image/png")
    except FileNotFoundError:
        raise HTTPException(404, f"no file {key!r}") from None


@router.get("/ui/login", response_class=HTMLResponse)
def login_form(next: str = "/ui", wrong: bool = False) -> HTMLResponse:
    """The form that asks for the API's token."""
    return html("login.html", title="Token needed", next=next, wrong=wrong)


@router.post("/ui/login")
async def login(request: Request, settings: SettingsDep) -> RedirectResponse:
    """Check the token from the form; right: set the cookie and go on to the page asked for. An address past
    LOGIN_TRIES wrong tokens gets 429 with Retry-After, its right token too, until the oldest ages out."""
    form = parse_qs((await request.body()).decode(errors="replace"))
    token = (form.get("token") or [""])[0]
    target = (form.get("next") or ["/ui"])[0]
    if not target.startswith("/ui"):  # only back into the viewer, never to another site
        target = "/ui"
    attempts: LoginAttempts = request.app.state.login_attempts
    who = request.client.host if request.client else ""
    wait = attempts.wait_s(who)
    if wait:
        raise HTTPException(
            429,
            f"more than {attempts.tries} wrong tokens in {attempts.window_s:.0f} s from this "
            f"address: try again in {wait} s",
            headers={"Retry-After": str(wait)},
        )
    if not settings.api_token or not secrets.compare_digest(token.encode(), settings.api_token.encode()):
        attempts.failed(who)
        return RedirectResponse(f"/ui/login?{urlencode({'next': target, 'wrong': 'true'})}", status_code=303)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(COOKIE, cookie_value(settings.api_token), httponly=True, samesite="strict")
    return response


router.include_router(pages)


def login_redirect(_request: Request, exc: Exception) -> RedirectResponse:
    """The exception handler that sends a browser without the token to the login form (registered for LoginNeeded
    alone; Starlette types a handler by Exception)."""
    if not isinstance(exc, LoginNeeded):
        raise exc
    return RedirectResponse(f"/ui/login?{urlencode({'next': exc.next_url})}", status_code=303)
