"""The gateway's one piece of shared state: its sessions, its upstream vLLM, its admin key and its log, which every
route reaches through deps.py (the app builds one per process)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool

from loraloop.errors import ConfigError
from loraloop.logs import get_logger
from loraloop.rollout.states import EpisodeStates, MemoryEpisodeStates
from loraloop.serve.gateway.sessions import Sessions
from loraloop.serve.gateway.upstream import Upstream
from loraloop.settings import Settings
from loraloop.store import open_store

T = TypeVar("T")


class Gateway:
    """The sessions (Redis when LORALOOP_BROKER_URL is set, else this process's memory), the upstream vLLM, the
    store they record to, the admin key that starts sessions, and the log."""

    def __init__(self, settings: Settings, states: EpisodeStates | None = None) -> None:
        if not settings.gateway_admin_key:
            raise ConfigError("LORALOOP_GATEWAY_ADMIN_KEY is empty: set the key that starts sessions")
        self.settings = settings
        self.admin_key = settings.gateway_admin_key
        self.store = open_store(settings=settings)
        self.sessions = Sessions(settings, self.store, states)
        self.upstream = Upstream(settings, self.store)
        self.log = get_logger("loraloop.gateway")
        self.in_memory = isinstance(self.sessions.states, MemoryEpisodeStates)

    async def off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        """A session call: in this process's memory it is quick and runs here; on Redis it waits on the network (and
        on a session's lock), so it runs in a worker thread and the event loop goes on serving."""
        return fn(*args) if self.in_memory else await run_in_threadpool(fn, *args)

    def expire(self) -> None:
        """Store and close the sessions idle past LORALOOP_GATEWAY_SESSION_TIMEOUT_S (the sweeper's tick)."""
        for session_id in self.sessions.expire():
            self.log.info("session expired (stored)", fields={"session": session_id})
