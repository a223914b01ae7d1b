"""A synchronous face on loraloop's async Playwright objects, for BrowserGym's task code.

BrowserGym's tasks (`AbstractBrowserTask.setup(page)`, `validate(page, chat_messages)`) are written against
Playwright's sync API. loraloop's browser pool (envs/web/browser.py) drives one Chromium per process with the
async API on one event-loop thread, so that concurrent episodes interleave; Playwright's sync objects cannot be
made from it (they belong to the thread that started a sync Playwright). Playwright has no adapter between the
two, so this is one: every call on a wrapped object runs on the browser loop and is waited for, and what it
returns is wrapped again when it is a Playwright object (a Locator, the context, the keyboard). It must be used
from a thread other than the browser loop's (the env calls the task from the episode's thread).
"""

from __future__ import annotations

import inspect
from typing import Any


def _is_playwright(value: Any) -> bool:
    return type(value).__module__.startswith("playwright.async_api")


class SyncFacade:
    """`obj`'s attributes, its coroutine methods run to completion on `host`'s loop (`timeout` seconds each)."""

    def __init__(self, obj: Any, host, timeout: float) -> None:
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_host", host)
        object.__setattr__(self, "_timeout", timeout)

    def _wrap(self, value: Any) -> Any:
        if _is_playwright(value):
            return SyncFacade(value, self._host, self._timeout)
        if isinstance(value, list) and value and all(_is_playwright(v) for v in value):
            return [SyncFacade(v, self._host, self._timeout) for v in value]
        return value

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._obj, name)
        if not callable(value) or _is_playwright(value):
            return self._wrap(value)

        def call(*args, **kwargs):
            result = value(*args, **kwargs)
            if inspect.isawaitable(result):
                result = self._host.run(result, timeout=self._timeout)
            return self._wrap(result)

        return call

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)  # what a task notes on the page (`_bgym_scale_factor`) stays here

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SyncFacade) and other._obj is self._obj

    def __hash__(self) -> int:
        return id(self._obj)

    def __repr__(self) -> str:
        return f"SyncFacade({self._obj!r})"
