"""The app that serves both task websites, `serve` to run it with uvicorn, `serving` to embed it in a thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse

from . import mail, mail_data, shop, shop_data
from .pages import BadInput
from .state import RunStates

INDEX = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>loraloop task websites</title></head>
<body style="font: 16px system-ui, sans-serif; max-width: 640px; margin: 40px auto">
<h1>loraloop task websites</h1>
<ul>
  <li><a href="/shop">Shopzon</a>: a shop, similar to Amazon</li>
  <li><a href="/mail">Quickmail</a>: a mail client, similar to Gmail</li>
</ul>
</body></html>
"""


def create_app() -> FastAPI:
    """A fresh app with empty run states: the shop under /shop, the mail client under /mail."""
    app = FastAPI(title="loraloop task websites", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.runs = RunStates({shop.KEY: shop_data.seed, mail.KEY: mail_data.seed})
    app.include_router(shop.router)
    app.include_router(mail.router)

    @app.exception_handler(BadInput)
    async def bad_input(request: Request, exc: BadInput) -> HTMLResponse:
        """Rejected input: the site's 4xx page naming the field, never a 500."""
        return exc.response()

    @app.get("/healthz")
    def healthz() -> dict:
        """Liveness, for whoever starts the sites and waits for them."""
        return {"ok": True}

    @app.get("/", response_class=HTMLResponse)
    def index() -> str:
        """Links to both sites."""
        return INDEX

    return app


def serve(host: str, port: int) -> None:
    """Run the sites with uvicorn in this process until interrupted."""
    import uvicorn

    uvicorn.run(create_app(), host=host, port=port, log_level="warning")


@contextmanager
def serving(host: str = "127.0.0.1", port: int = 0, timeout: float = 30.0) -> Iterator[str]:
    """Serve a fresh app from a daemon thread of this process while the block runs; yield its base URL.

    For tests and benchmarks that need the sites without a second process. Port 0 takes a free one
    (read back from the bound socket, so no other process can take it in between).
    """
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(create_app(), host=host, port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="loraloop-sites", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise RuntimeError(f"the task sites did not start on {host}:{port} within {timeout:g} s")
        time.sleep(0.05)
    bound = server.servers[0].sockets[0].getsockname()
    try:
        yield f"http://{bound[0]}:{bound[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
