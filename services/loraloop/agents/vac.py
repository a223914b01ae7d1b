"""The Verified Action Cache (VAC): state key -> an action that worked in that state, reused while it still fits.

HALO's orchestrator asks the cache before the worker model: when an earlier step (of this or another
episode, any worker) took an action in the same state and the action worked, taking it again skips a
model call. An action "worked" when the environment reported no error and the kind's own rule agrees
(its AgentFacet, kinds/spec.py: for the web, the page changed, its URL or structure; for the shell, the
command exited 0); a final action worked when the episode succeeded (`action_worked`). A state's key is
the kind's (the web: the task, the page's path and structure) or the task and a digest of the observation.

Rules, the same for both stores:
- one action per state key: the first verified action stays; verifying it again resets its failures;
- an entry is reused only when its target still exists (the kind's `target_exists`: the web, every bid
  the action names is on the current page; other kinds name no element) -> else the lookup says `stale`;
- and only when it would not repeat the last action taken -> else `repeat`;
- a cached action that fails again is evicted at its second failure.
The caller counts each lookup's event (hit, miss, stale, repeat) on its episode.

Kept in memory for one process (the embedded default), or in Redis when a broker is set, where every
worker shares it: one hash per state under `<namespace>:vac:`, a TTL, and the verify/fail updates as
Lua scripts, so two workers never lose each other's counts.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

import redis
from redis.backoff import ExponentialBackoff
from redis.retry import Retry

from loraloop.broker import BROKER_OUTAGE_S
from loraloop.envs.base import StepInfo
from loraloop.errors import ConfigError, ServiceUnavailable, without_credentials
from loraloop.kinds.spec import EnvKind
from loraloop.store.trajectories import obs_hash

EVICT_AFTER = 2  # failures of a cached action before it is dropped
TTL_S = 7 * 24 * 3600  # a Redis entry unused (neither verified nor failed) this long expires


@dataclass(frozen=True)
class CacheLookup:
    """What the cache has for a state: the action to take (None unless `event` is `hit`) and why."""

    action: str | None
    event: str  # hit | miss | stale (its target is gone: skipped) | repeat (it would repeat the last action: skipped)


def state_key(kind: EnvKind, task_id: str, observation: str) -> str:
    """The cache key of a state: the kind's own (the web: the task, the page's path and query, a digest of its
    structure), else the kind, the task and a digest of the observation (the shell's last output). The task is
    part of every key: the same state asks for a different action under another goal."""
    if kind.agent.state_key is not None:
        return kind.agent.state_key(task_id, observation)
    return f"{kind.name}:{task_id}:{obs_hash(observation or '')}"


def action_worked(kind: EnvKind, info: StepInfo, observation_before: str, observation_after: str | None) -> bool:
    """True when a step's action did what it should, so it may be cached for the state before it.

    Every kind: the env reported no error. A final action (the episode ended, no observation after) worked when
    the episode succeeded. Otherwise the kind's rule (the web: the page changed; the shell: the command exited 0).
    """
    if info.error:
        return False
    if observation_after is None:
        return bool(info.success)
    return kind.agent.action_worked(info, observation_before, observation_after)


def _same_action(kind: EnvKind, one: str, other: str) -> bool:
    """Two replies that are the same action (`Action: click('3')` and `click("3")`), else the same text."""
    parse = kind.envs.canonical_action
    first, second = parse(one), parse(other)
    return first == second if first is not None and second is not None else one.strip() == other.strip()


class ActionCache(Protocol):
    """The cache's interface; `MemoryActionCache` and `RedisActionCache` hold it."""

    def lookup(self, key: str, *, kind: EnvKind, observation: str, recent_actions: list[str]) -> CacheLookup:
        """The cached action for `key`, if it may be taken now (see the module's rules)."""

    def verified(self, key: str, action: str) -> None:
        """`action` worked in this state: keep it (or reset its failures)."""

    def failed(self, key: str, action: str) -> None:
        """The cached `action` failed here: evicted at its second failure."""


def _decide(entry: str | None, *, kind: EnvKind, observation: str, recent_actions: list[str]) -> CacheLookup:
    """The lookup's outcome for a stored entry (None: nothing stored)."""
    if entry is None:
        return CacheLookup(None, "miss")
    if not kind.agent.target_exists(entry, observation):
        return CacheLookup(None, "stale")
    if recent_actions and _same_action(kind, entry, recent_actions[-1]):
        return CacheLookup(None, "repeat")
    return CacheLookup(entry, "hit")


class MemoryActionCache:
    """The cache in this process's memory: episodes run by this process share it (the embedded default runs them
    on threads, so updates hold a lock)."""

    def __init__(self) -> None:
        self.entries: dict[str, tuple[str, int]] = {}  # key -> (action, failures)
        self._lock = threading.Lock()

    def lookup(self, key: str, *, kind: EnvKind, observation: str, recent_actions: list[str]) -> CacheLookup:
        """The cached action for `key`, if it may be taken now (see the module's rules)."""
        entry = self.entries.get(key)
        return _decide(entry and entry[0], kind=kind, observation=observation, recent_actions=recent_actions)

    def verified(self, key: str, action: str) -> None:
        """`action` worked in this state: keep it when the state has none, reset its failures when it is the one."""
        with self._lock:
            if key not in self.entries or self.entries[key][0] == action:
                self.entries[key] = (action, 0)

    def failed(self, key: str, action: str) -> None:
        """The cached `action` failed here: count it, and drop it at its second failure."""
        with self._lock:
            entry = self.entries.get(key)
            if entry is None or entry[0] != action:
                return
            if entry[1] + 1 >= EVICT_AFTER:
                del self.entries[key]
            else:
                self.entries[key] = (action, entry[1] + 1)


# KEYS[1] the entry's hash; ARGV: action, ttl. Keep the first action; the same action again resets its failures.
VERIFY = """
local current = redis.call('HGET', KEYS[1], 'action')
if current == false or current == ARGV[1] then
  redis.call('HSET', KEYS[1], 'action', ARGV[1], 'failures', 0)
  redis.call('EXPIRE', KEYS[1], tonumber(ARGV[2]))
end
"""
# KEYS[1] the entry's hash; ARGV: action, failures that evict, ttl. Count a failure of the cached action.
FAIL = """
if redis.call('HGET', KEYS[1], 'action') ~= ARGV[1] then return -1 end
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
if failures >= tonumber(ARGV[2]) then redis.call('DEL', KEYS[1]) return 0 end
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return failures
"""


class RedisActionCache:
    """The cache in Redis: every worker of every host sees what any of them verified.

    Like the job book, a command that finds the broker gone is tried again with backoff for about `outage_s`
    (a broker restart is waited out); past that, ServiceUnavailable naming the URL (without its password)."""

    def __init__(self, url: str, namespace: str, ttl_s: int = TTL_S, outage_s: float = BROKER_OUTAGE_S) -> None:
        self.url, self.prefix, self.ttl_s = url, f"{namespace}:vac:", ttl_s
        retry = Retry(ExponentialBackoff(cap=2.0, base=0.1), retries=int(outage_s / 2) + 4) if outage_s else None
        self.redis = redis.Redis.from_url(url, socket_connect_timeout=3, decode_responses=True, retry=retry)
        self._verify = self.redis.register_script(VERIFY)
        self._fail = self.redis.register_script(FAIL)

    def _call(self, what: str, fn, *args, **kwargs):
        """One Redis command; an unreachable server is a ServiceUnavailable naming the URL (no password)."""
        try:
            return fn(*args, **kwargs)
        except redis.RedisError as exc:
            raise ServiceUnavailable(
                f"action cache: {what} failed at {without_credentials(self.url)} ({type(exc).__name__})"
            ) from exc

    def lookup(self, key: str, *, kind: EnvKind, observation: str, recent_actions: list[str]) -> CacheLookup:
        """The cached action for `key`, if it may be taken now (see the module's rules)."""
        entry = self._call("lookup", self.redis.hget, self.prefix + key, "action")
        return _decide(entry, kind=kind, observation=observation, recent_actions=recent_actions)

    def verified(self, key: str, action: str) -> None:
        """`action` worked in this state: keep it when the state has none, reset its failures when it is the one."""
        self._call("verify", self._verify, keys=[self.prefix + key], args=[action, self.ttl_s])

    def failed(self, key: str, action: str) -> None:
        """The cached `action` failed here: count it, and drop it at its second failure."""
        self._call("fail", self._fail, keys=[self.prefix + key], args=[action, EVICT_AFTER, self.ttl_s])


def open_action_cache(redis_url: str | None, namespace: str) -> ActionCache:
    """The cache episodes share: in Redis when a broker is set (`redis://…`), else in this process's memory."""
    if not redis_url:
        return MemoryActionCache()
    if not redis_url.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"the action cache needs a Redis URL (LORALOOP_BROKER_URL=redis://…), got {redis_url!r}")
    return RedisActionCache(redis_url, namespace)
