"""The app that serves both task websites, and `serve` to run it with uvicorn."""
from __future__ import annotations

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
