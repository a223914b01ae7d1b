"""Keep every vLLM serving the store's adapters at their wanted versions (`loraloop adapters sync`).

A vLLM that restarted has lost its runtime-loaded adapters; a pass puts them back, verified against
what was recorded when they were published, and leaves alone what is already served. The stack's
`adapter-sync` service runs a pass every few seconds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from loraloop.errors import LoraloopError
from loraloop.serve.publish import listed, serve_on, vllm_urls
from loraloop.settings import Settings
from loraloop.store import adapters, open_store


def sync(settings: Settings) -> list[str]:
    """One pass: make every vLLM serve each stored adapter at the version the store wants (adapters.wanted),
    under its served name `<name>-vK`.

    Returns one 'name vN -> url' line per load it did.
    """
    store = open_store(settings=settings)
    loaded = []
    for name in adapters.names(store):
        version = adapters.wanted(store, name)
        if version is None:  # nothing published under the name yet
            continue
        for url in vllm_urls(settings):
            server = settings.model_copy(update={"vllm_url": url})
            if adapters.served_name(name, version) not in listed(server):
                serve_on(server, store, name, version)
                loaded.append(f"{name} {version} -> {url}")
    return loaded


def keep_synced(settings: Settings, every: float | None, heartbeat: Path | None, say: Callable[[str], None]) -> None:
    """One pass (every=None; a failure raises), or a pass every `every` seconds until stopped.

    In the loop a failure (vLLM restarting, the store away) is said and the next pass tries again;
    `heartbeat` is touched after each good pass, for a healthcheck.
    """
    while True:
        try:
            for line in sync(settings):
                say(f"loaded {line}")
            if heartbeat:
                heartbeat.touch()
        except LoraloopError as exc:
            if every is None:
                raise
            say(f"adapter sync: {exc}")
        if every is None:
            return
        time.sleep(every)
