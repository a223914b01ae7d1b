"""Gateway sessions: an outside agent's calls collected as one episode, stored when the session ends.

A session is an open episode in the Task Server's episode states (rollout/states.py: Redis when
LORALOOP_BROKER_URL is set, so a restarted gateway or a second replica goes on with it; this
process's memory otherwise). Its state is keyed by a digest of the session's API key, so a call
finds its session by the key it carries and the key itself is never stored. The state's
`session` is an EpisodeSession snapshot (rollout/session.py): the typed records so far, an
EpisodeStart (policy `gateway`, mode = the session's experiment) and one Step per completion.
Ending it (asked, refreshed or expired) writes the episode once under
trajectories/<mode>/<run_id>/<task>__attempt_<k>.jsonl through EpisodeSession.finish.

Rewards follow AReaL: a reward names a completion (`interaction_id`, the completion's id) or goes
to the last one; the episode's reward is the sum of its steps' rewards (AReaL's turn_discount 1),
and it is a success when that sum is positive.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import socket
import time
import uuid
from dataclasses import dataclass
from typing import Any

from loraloop.broker import is_redis
from loraloop.errors import SessionError
from loraloop.rollout.session import EpisodeSession
from loraloop.rollout.states import (
    EpisodeState,
    EpisodeStates,
    MemoryEpisodeStates,
    RedisEpisodeStates,
    write_or_reopen,
)
from loraloop.serve.gateway.recording import Completion
from loraloop.settings import Settings
from loraloop.store.backends import Store
from loraloop.store.records import Adapter, EpisodeStart, Record, Step
from loraloop.store.trajectories import episode_key, stamp

POLICY = "gateway"
ENDED_FIELDS = {"key", "task_id", "attempt", "steps", "success", "reward", "status", "answer"}  # what /end answers
KEY_PREFIX = "sk-sess-"  # AReaL's session keys look the same


@dataclass(frozen=True)
class OutsideTask:
    """The task of a session: only its id is known here (the agent runs its own environment)."""

    index: str
    env: str = POLICY
    # the rest of what loraloop reads of a task (tasks/base.Task): nothing is known of it here
    description: str = ""
    split: str = ""
    category: str = ""
    labels: tuple[str, ...] = ()
    source: str = ""
    short_index: str | None = None


def key_digest(api_key: str) -> str:
    """What a session is stored under: its key's SHA-256 (the key itself is in no store and no log)."""
    return hashlib.sha256(api_key.encode()).hexdigest()


def open_sessions_states(settings: Settings) -> EpisodeStates:
    """Redis-backed session states when a broker URL is set (shared, restart-proof), else this process's memory."""
    if is_redis(settings.broker_url):
        return RedisEpisodeStates(settings.broker_url, "sessions", lock_timeout_s=30.0, service="gateway")
    return MemoryEpisodeStates()


def stamped(record: Record) -> dict[str, Any]:
    """A record stamped as every writer stamps it (store/trajectories.stamp), as a snapshot holds it (JSON)."""
    return stamp(record).model_dump(mode="json", exclude_none=True)


class Sessions:
    """Every session of one gateway: start, record a completion, reward, end, expire."""

    def __init__(self, settings: Settings, store: Store, states: EpisodeStates | None = None) -> None:
        self.settings = settings
        self.store = store
        self.states = states or open_sessions_states(settings)
        self.replica = f"{socket.gethostname()}:{os.getpid()}"

    # -- finding a session ------------------------------------------------------------------------
    def open(self, api_key: str) -> EpisodeState:
        """The open session a key belongs to; 401 for a key no session has, 409 for one whose session ended."""
        digest = key_digest(api_key)
        state = self.states.get(digest)
        if state is not None:
            return state
        if self.states.finished(digest):
            raise SessionError("this session has ended (its episode is stored): start a new one", 409)
        raise SessionError("invalid API key: not the key of an open session", 401)

    def _next_attempt(self, mode: str, run_id: str, task_id: str) -> int:
        """A fresh attempt index for the task; never one whose episode is already stored (a restarted process). Counted
        per store key, not per task id: two ids the key writes alike (`a/b` and `a:b` are both `a_b`) share one count,
        so two open sessions never end on the same key, where the second would be dropped."""
        while True:
            attempt = self.states.next_attempt(episode_key(mode, run_id, task_id, 0).removesuffix("0.jsonl"))
            if not self.store.exists(episode_key(mode, run_id, task_id, attempt)):
                return attempt

    # -- the session's life -----------------------------------------------------------------------
    def start(
        self, task_id: str, experiment: str | None = None, run_id: str | None = None, api_key: str | None = None
    ) -> dict[str, Any]:
        """Open a session for a task and return its id and key; `api_key` of an open session ends that one first
        (AReaL's refresh: it is stored, and the new session keeps the key)."""
        if api_key is not None:
            try:
                self.end(api_key)
            except SessionError as exc:
                if exc.status != 401:  # a key no session has is simply taken for the new one
                    raise
        api_key = api_key or KEY_PREFIX + secrets.token_urlsafe(24)
        mode = experiment or self.settings.gateway_experiment
        run_id = run_id or time.strftime("%Y%m%d", time.gmtime())
        attempt = self._next_attempt(mode, run_id, task_id)
        session_id = f"{task_id}-{attempt}-{uuid.uuid4().hex[:8]}"
        start = EpisodeStart(
            run_id=run_id,
            task_id=task_id,
            mode=mode,
            attempt_idx=attempt,
            env=POLICY,
            policy=POLICY,
            protocol="chat",
            model_url=self.settings.vllm_url,
            session_id=session_id,
        )
        snapshot = {"char_budget": self.settings.prompt_char_budget, "records": [stamped(start)]}
        self.states.put(
            EpisodeState(
                episode_id=key_digest(api_key),
                sample_id=session_id,
                task_id=task_id,
                attempt=attempt,
                session=snapshot,
                owner=self.replica,
                protocol="chat",
            )
        )
        return {
            "session_id": session_id,
            "api_key": api_key,
            "episode_key": episode_key(mode, run_id, task_id, attempt),
        }

    def record(
        self,
        api_key: str,
        completion: Completion,
        messages: list[dict[str, Any]],
        sampling: dict[str, Any],
        adapter: Adapter | None,
        latency_ms: float,
    ) -> None:
        """Add a completion to its session as one step (the model's turn: action_source `worker`)."""
        digest = key_digest(api_key)
        with self.states.lock(digest):
            state = self.open(api_key)
            records = state.session["records"]
            start = records[0]
            if start.get("first_observation") is None:  # the opening chat's last message: the task as posed
                start["first_observation"] = last_text(messages)
                start["adapter"] = None if adapter is None else adapter.model_dump(mode="json")
                start["worker_model"] = completion.model
                start["sampling"] = sampling
            shown = last_text(messages)
            records.append(
                stamped(
                    Step(
                        run_id=start["run_id"],
                        step_idx=len(records) - 1,
                        observation=shown,
                        obs_summary=shown[:400],
                        raw_output=completion.action,
                        action_source="worker",
                        model=completion.model,
                        model_latency_ms=round(latency_ms, 1),
                        completion_tokens=len(completion.completion_token_ids),
                        prompt_token_ids=completion.prompt_token_ids,
                        completion_token_ids=completion.completion_token_ids,
                        logprobs=completion.logprobs,
                        adapter=adapter,
                        sampling=sampling,
                        messages=messages,
                        interaction_id=completion.id,
                        finish_reason=completion.finish_reason,
                        tool_calls=completion.tool_calls or None,
                    )
                )
            )
            self.states.put(state)

    def reward(self, api_key: str, reward: float, interaction_id: str | None = None) -> dict[str, Any]:
        """Give a completion its reward (the last one when `interaction_id` is None); 400 when there is none."""
        with self.states.lock(key_digest(api_key)):
            state = self.open(api_key)
            steps = state.session["records"][1:]
            if not steps:
                raise SessionError(f"session {state.sample_id} has no completion yet to reward")
            if interaction_id is None:
                step = steps[-1]
            else:
                step = next((s for s in steps if s.get("interaction_id") == interaction_id), None)
                if step is None:
                    raise SessionError(
                        f"interaction_id {interaction_id!r} is not a completion of session {state.sample_id}", 404
                    )
            step["reward"] = reward
            self.states.put(state)
            return {"session_id": state.sample_id, "interaction_id": step.get("interaction_id"), "reward": reward}

    def end(self, api_key: str, status: str = "completed") -> dict[str, Any]:
        """Store the session as one episode and close it; its summary (key, steps, reward) is returned."""
        digest = key_digest(api_key)
        with self.states.lock(digest):
            state = self.open(api_key)
            if not self.states.claim(digest):
                raise SessionError("this session has ended (its episode is stored): start a new one", 409)
            return self._store(state, status)

    def _store(self, state: EpisodeState, status: str) -> dict[str, Any]:
        """Write a claimed session's episode through EpisodeSession.finish (written once, never over another). A write
        that fails (the store unreachable: the gateway answers 503) puts the session back open, its calls and key
        kept, so ending it again once the store answers stores it: nothing is lost (states.write_or_reopen)."""
        return write_or_reopen(self.states, state, lambda: self._write(state, status))

    def _write(self, state: EpisodeState, status: str) -> dict[str, Any]:
        """The episode of a claimed session, written; its summary."""
        session = EpisodeSession.resume(self.store, None, OutsideTask(state.task_id), state.session)
        total = sum(step.reward for step in session.recorder.records if isinstance(step, Step))
        session.outcome.success, session.outcome.reward = total > 0, total
        stored = session.finish(status)
        return {
            "session_id": state.sample_id,
            "episode_key": session.key,
            "stored": stored,
            **session.summary().model_dump(include=ENDED_FIELDS),
        }

    def expire(self) -> list[str]:
        """Store every session idle past the timeout as `expired` (never dropped); their session ids."""
        ended = []
        for digest in self.states.idle(time.time() - self.settings.gateway_session_timeout_s):
            with self.states.lock(digest):
                state = self.states.get(digest)
                if state is not None and self.states.claim(digest):
                    self._store(state, "expired")
                    ended.append(str(state.sample_id))  # a gateway session's id
        return ended

    def interrupt_all(self) -> None:
        """Store every open session as `interrupted`: a gateway keeping them in memory is stopping."""
        for digest in self.states.idle(float("inf")):
            state = self.states.get(digest)
            if state is not None and self.states.claim(digest):
                self._store(state, "interrupted")

    def count(self) -> int:
        """How many sessions are open (across replicas when shared)."""
        return self.states.count()


def last_text(messages: list[dict[str, Any]]) -> str:
    """The text of a chat's last message (what the agent added since its previous call), '' when it has none."""
    content = messages[-1].get("content") if messages else ""
    if isinstance(content, list):  # OpenAI's content parts: their text pieces
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""
