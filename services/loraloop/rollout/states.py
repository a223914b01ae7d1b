"""Where the Task Server and the gateway keep their open episodes, so any replica can serve any call.

With Redis (LORALOOP_BROKER_URL) the state outlives the API process and is shared by every
replica behind a load balancer; without it, one process keeps it in memory. Either way an
episode's state is plain JSON: its EpisodeSession snapshot (the records collected so far) and
the handle another replica attaches to its environment with.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from loraloop.errors import EnvironmentFailure

T = TypeVar("T")


@contextmanager
def sweeping(expire: Callable[[], Any], idle_timeout_s: float, log, name: str) -> Iterator[None]:
    """While the block runs, call `expire` on a timer in a daemon thread (every quarter of the idle timeout, 1 to
    15 s): open episodes (the Task Server's, the gateway's sessions) idle too long end even when no call comes.
    A sweep that fails is logged and tried again on the next tick."""
    done = threading.Event()

    def sweep() -> None:
        while not done.wait(min(15.0, max(1.0, idle_timeout_s / 4))):
            try:
                expire()
            except Exception as exc:  # a sweep that fails is retried on the next tick
                log.warning("expiry sweep failed", fields={"error": exc})

    threading.Thread(target=sweep, name=name, daemon=True).start()
    try:
        yield
    finally:
        done.set()


# How long an ended episode is remembered, so that a late step or cancel is told it ended (400) rather than that
# the id is unknown (404): a week, past any client's retry. Memory mode keeps at most FINISHED_KEPT of them.
FINISHED_TTL_S = 7 * 24 * 3600
FINISHED_KEPT = 100_000


@dataclass
class EpisodeState:
    """One open Task Server episode, as every replica sees it.

    `session` is the episode's EpisodeSession snapshot (records so far, turns, outcome); `handle`
    is what another replica attaches to the environment with (a shell's container), or None for a
    kind whose episodes live in the process that started them, named by `owner`. `ending` is set on an
    episode that is over but not stored yet, because its write failed (write_or_reopen): how it ended
    (status, error, outcome, the done reply's info), so the next call that ends it stores it so.
    """

    episode_id: str
    sample_id: str | int
    task_id: str
    attempt: int
    session: dict[str, Any]
    handle: dict[str, Any] | None = None
    owner: str = ""
    protocol: str = "text"
    ending: dict[str, Any] | None = None

    def to_json(self) -> str:
        """The state as one JSON document.

        Its fields hold plain JSON values already, so they are dumped as they are: dataclasses.asdict would copy the
        whole session, every token id and logprob, on every call (18 % of the recording gateway's request time in a
        py-spy profile, growing with the session)."""
        return json.dumps(vars(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str | bytes) -> EpisodeState:
        """Read a state written by to_json."""
        return cls(**json.loads(text))


def write_or_reopen(states: EpisodeStates, state: EpisodeState, write: Callable[[], T]) -> T:
    """Store a claimed episode (`write`), or, when the write fails (the store unreachable: the APIs answer 503 naming
    it), put its state back open and re-raise: nothing is lost, and ending it again once the store answers stores it
    once. The one way the gateway's sessions and the Task Server's episodes are ended."""
    try:
        return write()
    except Exception:
        states.put(state)
        raise


class EpisodeStates(Protocol):
    """Open episodes: saved after every call, claimed once when they end."""

    def put(self, state: EpisodeState) -> None: ...

    def get(self, episode_id: str) -> EpisodeState | None: ...

    def claim(self, episode_id: str) -> bool: ...

    def finished(self, episode_id: str) -> bool: ...

    def idle(self, seen_before: float) -> list[str]: ...

    def count(self) -> int: ...

    def next_attempt(self, task_id: str) -> int: ...

    def lock(self, episode_id: str): ...


class MemoryEpisodeStates:
    """One process's episodes (the embedded default: no Redis)."""

    def __init__(self, finished_ttl_s: float = FINISHED_TTL_S, finished_kept: int = FINISHED_KEPT) -> None:
        self._states: dict[str, tuple[str, float]] = {}
        self._finished: OrderedDict[str, float] = OrderedDict()  # oldest first
        self._attempts: dict[str, int] = {}
        self._locks: dict[str, list] = {}  # episode id -> [its lock, holders and waiters]
        self._guard = threading.Lock()
        self._finished_ttl = finished_ttl_s
        self._finished_kept = finished_kept

    def put(self, state: EpisodeState) -> None:
        """Save the state and mark the episode as just used."""
        with self._guard:
            self._states[state.episode_id] = (state.to_json(), time.time())

    def get(self, episode_id: str) -> EpisodeState | None:
        """The saved state, or None for an unknown or ended episode."""
        entry = self._states.get(episode_id)
        return EpisodeState.from_json(entry[0]) if entry else None

    def claim(self, episode_id: str) -> bool:
        """Remove an open episode; True for exactly one caller, who then ends it."""
        with self._guard:
            if self._states.pop(episode_id, None) is None:
                return False
            now = time.time()
            self._finished[episode_id] = now
            while self._finished and (
                len(self._finished) > self._finished_kept
                or now - next(iter(self._finished.values())) >= self._finished_ttl
            ):
                self._finished.popitem(last=False)
            return True

    def finished(self, episode_id: str) -> bool:
        """True for an episode that ended in the last FINISHED_TTL_S (a late step gets 400, not 404)."""
        ended = self._finished.get(episode_id)
        return ended is not None and time.time() - ended < self._finished_ttl

    def idle(self, seen_before: float) -> list[str]:
        """Episodes last used before the given time."""
        return [eid for eid, (_, seen) in list(self._states.items()) if seen < seen_before]

    def count(self) -> int:
        """How many episodes are open."""
        return len(self._states)

    def next_attempt(self, task_id: str) -> int:
        """0, 1, 2… per task: the attempt index of the next episode of that task."""
        with self._guard:
            self._attempts[task_id] = self._attempts.get(task_id, -1) + 1
            return self._attempts[task_id]

    @contextmanager
    def lock(self, episode_id: str) -> Iterator[None]:
        """Serialise calls on one episode. The lock is kept only while someone holds or waits for it, or the
        episode is open: calls naming unknown episodes leave nothing behind."""
        with self._guard:
            entry = self._locks.setdefault(episode_id, [threading.Lock(), 0])
            entry[1] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._guard:
                entry[1] -= 1
                if entry[1] == 0 and episode_id not in self._states:
                    self._locks.pop(episode_id, None)


class RedisEpisodeStates:
    """Episodes in Redis: shared by every replica and kept across restarts, under loraloop:<service>:<namespace>
    (the Task Server's, or the gateway's sessions)."""

    def __init__(
        self,
        url: str,
        namespace: str,
        lock_timeout_s: float,
        finished_ttl_s: float = FINISHED_TTL_S,
        service: str = "taskserver",
    ) -> None:
        import redis

        self._redis = redis.Redis.from_url(url)
        self._ns = f"loraloop:{service}:{namespace}"
        self._finished_ttl = max(1, int(finished_ttl_s))
        self._lock_timeout = lock_timeout_s

    def _key(self, kind: str, name: str) -> str:
        return f"{self._ns}:{kind}:{name}"

    def put(self, state: EpisodeState) -> None:
        """Save the state and mark the episode as just used."""
        pipe = self._redis.pipeline()
        pipe.set(self._key("episode", state.episode_id), state.to_json())
        pipe.zadd(f"{self._ns}:active", {state.episode_id: time.time()})
        pipe.execute()

    def get(self, episode_id: str) -> EpisodeState | None:
        """The saved state, or None for an unknown or ended episode."""
        raw = self._redis.get(self._key("episode", episode_id))
        return EpisodeState.from_json(raw) if raw else None

    def claim(self, episode_id: str) -> bool:
        """Remove an open episode; True for exactly one caller across replicas, who then ends it."""
        if not self._redis.zrem(f"{self._ns}:active", episode_id):
            return False
        pipe = self._redis.pipeline()
        pipe.delete(self._key("episode", episode_id))
        pipe.set(self._key("finished", episode_id), 1, ex=self._finished_ttl)
        pipe.execute()
        return True

    def finished(self, episode_id: str) -> bool:
        """True for an episode that ended in the last FINISHED_TTL_S (a late step gets 400, not 404)."""
        return bool(self._redis.exists(self._key("finished", episode_id)))

    def idle(self, seen_before: float) -> list[str]:
        """Episodes last used before the given time."""
        ids = cast("list[bytes]", self._redis.zrangebyscore(f"{self._ns}:active", 0, seen_before))  # raw replies
        return [eid.decode() for eid in ids]

    def count(self) -> int:
        """How many episodes are open across replicas."""
        return int(self._redis.zcard(f"{self._ns}:active"))

    def next_attempt(self, task_id: str) -> int:
        """0, 1, 2… per task across replicas: the attempt index of the next episode of that task."""
        return int(self._redis.incr(self._key("attempts", task_id))) - 1

    @contextmanager
    def lock(self, episode_id: str) -> Iterator[None]:
        """Serialise calls on one episode across replicas (the lock expires if its holder dies)."""
        lock = self._redis.lock(
            self._key("lock", episode_id), timeout=self._lock_timeout, blocking_timeout=self._lock_timeout
        )
        if not lock.acquire():
            raise EnvironmentFailure(f"episode {episode_id} is busy in another call")
        try:
            yield
        finally:
            try:
                lock.release()
            except Exception:  # expired while we worked: nothing to release
                pass
