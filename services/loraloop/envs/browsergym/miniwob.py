"""Where MiniWoB++'s pages come from: MINIWOB_URL when set (the Compose stack's `sites` service serves them), else
a static server this process starts on loopback over the `miniwob` package's html/ folder.

Why a server of the kind's own for one-machine runs: the pages are static files and the Chromium that loads them
runs in this same process's pool, so a loopback server here needs no other process started first (as `make demo`
starts nothing else), and it dies with the process. The stack's workers run in containers of their own, so there
one `sites` service serves them for every worker (compose.yaml sets MINIWOB_URL).
"""

from __future__ import annotations

import functools
import os
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from loraloop.errors import ConfigError, ServiceUnavailable

PROBE = "click-test.html"  # a page every MiniWoB release has


def html_root() -> Path:
    """The `miniwob` package's html/ folder (miniwob/, core/, common/, flight/); fails naming the package."""
    try:
        import miniwob
    except ImportError as exc:
        raise ConfigError(f"MiniWoB tasks need the miniwob package (pip install miniwob==1.1.0): {exc}") from exc
    root = Path(miniwob.__file__).parent / "html"
    if not (root / "miniwob" / PROBE).is_file():
        raise ConfigError(f"the miniwob package at {root.parent} has no html/miniwob/{PROBE}")
    return root


class _Quiet(SimpleHTTPRequestHandler):
    # MiniWoB's pages declare no charset; served as UTF-8, as they are written (unicode-test's buttons)
    extensions_map = {
        **SimpleHTTPRequestHandler.extensions_map,
        ".html": "text/html; charset=utf-8",
        ".js": "text/javascript; charset=utf-8",
        ".css": "text/css; charset=utf-8",
    }

    def log_message(self, *_args) -> None:  # one line a file per page load otherwise
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:  # a page closed mid-download: nothing to report
        pass


_SERVERS: dict[int, tuple[ThreadingHTTPServer, str]] = {}
_LOCK = threading.Lock()


def local_url() -> str:
    """This process's own MiniWoB server (started at the first call): `http://127.0.0.1:PORT/miniwob/`."""
    with _LOCK:
        pid = os.getpid()  # a forked worker starts its own
        if pid not in _SERVERS:
            handler = functools.partial(_Quiet, directory=str(html_root()))
            server = _Server(("127.0.0.1", 0), handler)
            threading.Thread(target=server.serve_forever, name="miniwob-http", daemon=True).start()
            _SERVERS[pid] = (server, f"http://127.0.0.1:{server.server_port}/miniwob/")
        return _SERVERS[pid][1]


def miniwob_url(settings) -> str:
    """MINIWOB_URL (LORALOOP_MINIWOB_URL) when set, else this process's own server. A URL without the trailing
    slash BrowserGym needs (it appends `<type>.html`) fails naming it."""
    url = settings.miniwob_url
    if not url:
        return local_url()
    if not url.startswith(("http://", "https://", "file://")) or not url.endswith("/"):
        raise ConfigError(
            f"MINIWOB_URL={url!r} must be an http(s) or file URL ending in '/' "
            f"(e.g. http://127.0.0.1:8090/miniwob-html/miniwob/)"
        )
    return url


def check_url(url: str, timeout: float = 5.0) -> None:
    """Fail naming MINIWOB_URL when it serves no MiniWoB page (nothing listening, a 404, another site)."""
    if url.startswith("file://"):
        if not Path(url.removeprefix("file://"), PROBE).is_file():
            raise ServiceUnavailable(f"MINIWOB_URL={url}: no {PROBE} in that folder")
        return
    try:
        reply = httpx.get(url + PROBE, timeout=timeout)
    except httpx.HTTPError as exc:
        raise ServiceUnavailable(
            f"MINIWOB_URL={url} does not answer ({type(exc).__name__}: {exc}): serve "
            f"miniwob/html over HTTP (the stack's `sites` service does) or unset it"
        ) from exc
    if reply.status_code != 200 or "core.js" not in reply.text:
        raise ServiceUnavailable(
            f"MINIWOB_URL={url} serves no MiniWoB page ({url + PROBE}: HTTP "
            f"{reply.status_code}): it must point at miniwob/html/miniwob/"
        )
