"""One Chromium per worker process, driven by Playwright's async API on one event-loop thread.

Episodes in any thread of the process call `run(coro)`; their browser work interleaves on the loop,
so one slow page does not hold the others. Each episode gets a fresh context. A browser that died
(crash, kill) is noticed at the next `context()` and started again.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from collections.abc import Coroutine
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

from loraloop.errors import EnvironmentFailure
from loraloop.logs import get_logger

T = TypeVar("T")
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--disable-features=Translate,MediaRouter",
]
log = get_logger("loraloop.web")
MISSING_BROWSER = (
    "no such file: install Debian's headless shell (apt-get install chromium-headless-shell; make setup does) "
    "or point LORALOOP_CHROMIUM_PATH at another Chromium"
)


class BrowserHost:
    """The process's browser: an event loop thread, Playwright and a Chromium it restarts when needed."""

    def __init__(self, executable: str, headless: bool = True) -> None:
        self.executable = executable
        self.headless = headless
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="loraloop-browser", daemon=True)
        self.thread.start()
        self.playwright = None
        self.browser = None
        self.launches = 0
        self._lock = asyncio.Lock()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run a coroutine on the browser loop and wait for its result (EnvironmentFailure on timeout)."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except FutureTimeout as exc:
            future.cancel()
            raise EnvironmentFailure(f"browser did not answer within {timeout} s") from exc

    async def _ensure(self):
        async with self._lock:
            if self.browser is not None and self.browser.is_connected():
                return self.browser
            if self.browser is not None:
                log.warning("browser died; starting a new one", fields={"launches": self.launches})
            if self.playwright is None:
                from playwright.async_api import async_playwright

                try:
                    self.playwright = await async_playwright().start()
                except Exception as exc:
                    raise EnvironmentFailure(f"Playwright's driver did not start ({exc}){driver_diagnosis()}") from exc
            try:
                self.browser = await self.playwright.chromium.launch(
                    executable_path=self.executable, headless=self.headless, args=LAUNCH_ARGS
                )
            except Exception as exc:
                missing = "" if os.path.exists(self.executable) else f"; {MISSING_BROWSER}"
                raise EnvironmentFailure(f"cannot start Chromium at {self.executable}{missing}: {exc}") from exc
            self.launches += 1
            return self.browser

    async def new_context(self, **options):
        """A fresh, isolated browser context (cookies, storage, tabs) for one episode."""
        browser = await self._ensure()
        try:
            return await browser.new_context(**options)
        except Exception:  # the browser died between the check and the call: start it again once
            self.browser = None
            browser = await self._ensure()
            return await browser.new_context(**options)

    async def _close(self) -> None:
        if self.browser is not None:
            await self.browser.close()
        if self.playwright is not None:
            await self.playwright.stop()
        self.browser = self.playwright = None

    def close(self) -> None:
        """Close the browser and stop the loop thread (worker shutdown)."""
        try:
            self.run(self._close(), timeout=30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=5)


def driver_diagnosis() -> str:
    """Why Playwright's Node driver cannot run here (e.g. a missing shared library), or '' if it can.

    Playwright itself only reports that the driver's pipe closed, which names no cause.
    """
    from playwright._impl._driver import compute_driver_executable

    node = compute_driver_executable()[0]
    try:
        proc = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    except OSError as exc:
        return f"; {node}: {exc}"
    return f"; {node}: {proc.stderr.strip()}" if proc.returncode else ""


_HOSTS: dict[tuple[int, str], BrowserHost] = {}
_HOSTS_LOCK = threading.Lock()


def get_browser(executable: str) -> BrowserHost:
    """This process's browser host (a forked worker gets its own, never its parent's)."""
    key = (os.getpid(), executable)
    with _HOSTS_LOCK:
        if key not in _HOSTS:
            _HOSTS[key] = BrowserHost(executable)
        return _HOSTS[key]


def close_browsers() -> None:
    """Close every browser this process started (worker shutdown), so no Chromium outlives it."""
    with _HOSTS_LOCK:
        hosts = [host for (pid, _), host in _HOSTS.items() if pid == os.getpid()]
        _HOSTS.clear()
    for host in hosts:
        try:
            host.close()
        except Exception as exc:  # noqa: BLE001  a browser that will not close dies with the process anyway
            log.warning("browser did not close", fields={"error": str(exc)})
