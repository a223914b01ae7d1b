"""REAL's harness protocol, the same for every site: `/config` resets a run, `/finish` reports it.

The run of a request is the `loraloop_run` cookie that `/config` sets (no cookie: run "default").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from .pages import Site
from .state import Run, RunStates

COOKIE = "loraloop_run"


def run_of(request: Request) -> str:
    """The run a request belongs to: its cookie, else "default"."""
    return request.cookies.get(COOKIE) or "default"


@contextmanager
def session(request: Request, site: str) -> Iterator[Run]:
    """The request's run of `site`, locked for the duration of the block."""
    runs: RunStates = request.app.state.runs
    with runs.edit(site, run_of(request)) as run:
        yield run


def add_protocol_routes(router: APIRouter, key: str, site: Site, collections: dict[str, tuple[str, ...]]) -> None:
    """Add `/config` and `/finish` to a site's router; `collections` name the lists `differences` covers."""

    @router.get("/config", response_class=HTMLResponse)
    def config(request: Request, run_id: str = "default", task_id: str = "", latency: float = 0) -> HTMLResponse:
        """Reset run `run_id` to the seed and bind the browser to it; `latency` is accepted and ignored."""
        runs: RunStates = request.app.state.runs
        runs.reset(key, run_id, task_id)
        with runs.edit(key, run_id) as run:
            response = site.render("ready.html", run.state, title="Ready", run_id=run_id, task_id=task_id)
        response.set_cookie(COOKIE, run_id, path="/")
        return response

    @router.get("/finish", response_class=HTMLResponse)
    def finish(request: Request, run_id: str = "") -> HTMLResponse:
        """The run's states, diffs and action history as JSON in a <pre>; 404 for a run never started."""
        run_id = run_id or run_of(request)
        runs: RunStates = request.app.state.runs
        found = runs.report(key, run_id, collections)
        if found is None:
            return site.error({}, f"Unknown run '{run_id}': open {site.home}/config?run_id={run_id} first.", status=404)
        task_id, document = found
        return site.render(
            "finish.html",
            document["finalstate"],
            title="Finished",
            run_id=run_id,
            task_id=task_id,
            document=json.dumps(document, indent=2),
        )
