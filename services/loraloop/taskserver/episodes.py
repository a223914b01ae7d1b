"""The Task Server's one piece of shared state: the episodes it serves, over one registry.

Each episode runs as an EpisodeSession (rollout/session.py), so what the Task Server stores is what a rollout worker
stores. Episode state lives where every replica reaches it (Redis when LORALOOP_BROKER_URL is set, memory otherwise);
this process also keeps the environments it holds (`local`), with the step count each has seen. The routes
(taskserver/routes/) call `Episodes` through taskserver/deps.py; the app (taskserver/app.py) builds one per server.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from typing import Any, cast

from fastapi import HTTPException
from redis import RedisError

from loraloop.broker import is_redis
from loraloop.envs.base import Env, EnvOptions, SharedEnv
from loraloop.errors import ConfigError, LoraloopError, StoreUnavailable
from loraloop.kinds.registry import env_kind
from loraloop.logs import get_logger
from loraloop.rollout.session import EpisodeSession, steps_taken
from loraloop.rollout.states import (
    EpisodeState,
    EpisodeStates,
    MemoryEpisodeStates,
    RedisEpisodeStates,
    write_or_reopen,
)
from loraloop.settings import Settings
from loraloop.store import open_store
from loraloop.store.records import EpisodeOutcome, Provenance
from loraloop.store.trajectories import episode_key
from loraloop.task_registry import Registry, Task
from loraloop.taskserver.models import (
    Cancelled,
    CancelRequest,
    EpisodeReply,
    Health,
    Observation,
    StartRequest,
    StepRequest,
    TaskInfo,
)


def open_states(settings: Settings, task_name: str) -> EpisodeStates:
    """Redis-backed states when a broker URL is set (shared, restart-proof), else this process's memory."""
    lock_timeout = settings.command_timeout_s * 3 + 60
    if is_redis(settings.broker_url):
        return RedisEpisodeStates(settings.broker_url, task_name, lock_timeout)
    return MemoryEpisodeStates()


class Episodes:
    """The episodes of one Task Server: started, stepped, cancelled, expired and stored; trajectories go to
    trajectories/<task_name>/<run_id>/."""

    def __init__(
        self,
        registry: Registry,
        task_name: str,
        settings: Settings,
        idle_timeout_s: float,
        run_id: str | None,
        states: EpisodeStates | None,
    ) -> None:
        self.registry = registry
        self.task_name = task_name
        self.settings = settings
        self.idle_timeout_s = idle_timeout_s
        self.states = states or open_states(settings, task_name)
        self.run_id = run_id or time.strftime("%Y%m%d", time.gmtime())
        self.store = open_store(settings=settings)
        self.replica = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.local: dict[str, tuple[Env, int]] = {}  # this process's envs, with the step count they have seen
        self.local_guard = threading.Lock()
        self.log = get_logger("loraloop.taskserver", task=task_name, run=self.run_id)
        self.kinds = sorted({task.env for task in registry.tasks})

    # --- what the routes answer -------------------------------------------------------------------------------

    def health(self) -> Health:
        """Liveness and how many episodes are open (across replicas when shared)."""
        return Health(status="healthy", active_episodes=self.states.count(), task_name=self.task_name)

    def info(self) -> TaskInfo:
        """What this server serves: its tasks, the longest episode and the environment kinds."""
        return TaskInfo(
            name=self.task_name,
            num_samples=len(self.registry.tasks),
            max_episode_length=max((env_kind(k).envs.max_steps for k in self.kinds), default=0),
            observation_type="text",
            action_type="text",
            env_kinds=self.kinds,
            description="; ".join(env_kind(k).description for k in self.kinds) + f" (registry {self.registry.name})",
        )

    def start(self, request: StartRequest) -> EpisodeReply:
        """Start an episode for a sample (its index string, or its position as an int). Everything the request
        names is checked before an environment is made (400 naming the field); from then on any failure releases
        the environment, and until then this process holds it where shutdown finds it."""
        task = self.resolve(request.sample_id)
        kind = env_kind(task.env)
        protocol = request.config.get("protocol", "text")
        if not isinstance(protocol, str) or protocol not in kind.envs.protocols:
            raise HTTPException(
                400,
                f"config.protocol must be one of {list(kind.envs.protocols)} for {task.env} tasks, got {protocol!r}",
            )
        episode_id = str(uuid.uuid4())
        shared = kind.envs.attach is not None
        try:
            env = kind.envs.make_env(
                task,
                self.settings,
                EnvOptions(protocol=protocol, episode_id=episode_id, shared=shared, config=request.config),
            )
        except ConfigError as exc:  # the start's config names something this server does not take
            raise HTTPException(400, str(exc)) from exc
        with self.local_guard:
            self.local[episode_id] = (env, 0)
        session = self._begin(env, task, request, episode_id, protocol, shared)
        info: dict[str, Any] = {"max_turns": env.max_rounds, "sample_id": request.sample_id, "turn": 0}
        tools = kind.envs.tools(protocol, task)
        if tools:  # a client speaking native tool calls sends these with its model requests
            info["tools"] = tools
        return EpisodeReply(
            episode_id=episode_id,
            observation=Observation(type="messages", content=session.prompt()),
            reward=0.0,
            done=False,
            info=info,
        )

    def step(self, request: StepRequest) -> EpisodeReply:
        """Apply one action; at the end the observation is null and the info carries the outcome. The store
        unreachable when the episode ends: 503, the episode stays open, and this step sent again stores it and gets
        the same end (the action is not played twice)."""
        episode_id = request.episode_id
        with self.states.lock(episode_id):
            state = self.states.get(episode_id)
            if state is None:
                if self.states.finished(episode_id):
                    raise HTTPException(400, f"episode {episode_id} has already ended (it is stored)")
                raise HTTPException(404, f"unknown episode {episode_id!r}")
            if state.ending is not None:  # over, but its write failed: store it now and answer its end again
                if self.states.claim(episode_id):
                    self.end(state)
                return EpisodeReply(
                    episode_id=episode_id,
                    observation=None,
                    done=True,
                    reward=EpisodeOutcome.model_validate(state.ending["outcome"]).reward,
                    info=state.ending["info"],
                )
            task = self.registry.get(state.task_id)
            try:
                env = self.env_for(state, task)
                session = EpisodeSession.resume(self.store, env, task, state.session)
                result = session.act(request.action.content, source="client")
            except StoreUnavailable:  # the step's own write (a screenshot): 503, the episode goes on
                raise
            except LoraloopError as exc:  # the environment failed, not the agent: the episode ends, stored
                return self._env_failed(state, task, exc)
            with self.local_guard:
                self.local[episode_id] = (env, session.steps)
            if not result.done:
                state.session = session.snapshot()
                state.handle = cast(SharedEnv, env).handle() if state.handle is not None else None
                self.states.put(state)
                return EpisodeReply(
                    episode_id=episode_id,
                    observation=Observation(type="text", content=result.observation),
                    reward=0.0,
                    done=False,
                    info={"turn": result.info.turn},
                )
            end = result.info
            info = {
                "turn": end.turn,
                "status": end.status,
                "success": end.success,
                "answer": end.answer,
                "num_turns": end.num_turns,
            }
            if self.states.claim(episode_id):
                self.end(self.over(state, session, info=info))
        return EpisodeReply(episode_id=episode_id, observation=None, reward=result.reward, done=True, info=info)

    def cancel(self, request: CancelRequest) -> Cancelled:
        """End an episode early, store its trajectory and release its environment."""
        if not self.stop(request.episode_id, "cancelled"):
            if self.states.finished(request.episode_id):
                raise HTTPException(400, f"episode {request.episode_id} has already ended (it is stored)")
            raise HTTPException(404, f"unknown episode {request.episode_id!r}")
        return Cancelled(status="cancelled", episode_id=request.episode_id)

    # --- the parts of a start and a step ----------------------------------------------------------------------

    def resolve(self, sample: int | str) -> Task:
        """The task a start names: its position (404 outside the registry) or its index string (404 unknown)."""
        if isinstance(sample, str) and len(sample) > 256:
            raise HTTPException(400, f"sample_id of {len(sample)} characters: no task index is longer than 256")
        if isinstance(sample, int):
            if not 0 <= sample < len(self.registry.tasks):
                raise HTTPException(404, f"sample {sample} out of range 0..{len(self.registry.tasks) - 1}")
            return self.registry.tasks[sample]
        try:
            return self.registry.get(sample)
        except LoraloopError as exc:
            raise HTTPException(404, str(exc)) from exc

    def _begin(
        self, env: Env, task: Task, request: StartRequest, episode_id: str, protocol: str, shared: bool
    ) -> EpisodeSession:
        """Open the episode's session and state on a made environment; any failure releases the environment and
        stores the episode as failed at start once it had an attempt index (500 naming the failure; Redis or the
        store: 503)."""
        session = None
        try:
            session = EpisodeSession(
                self.store,
                env,
                task,
                mode=self.task_name,
                run_id=self.run_id,
                attempt=self.next_attempt(task.index),
                char_budget=self.settings.prompt_char_budget,
                provenance=Provenance(
                    policy="task-server",
                    protocol=protocol,
                    max_steps=env.max_rounds,
                    sample_id=request.sample_id,
                    episode_id=episode_id,
                    config=request.config,
                ),
            )
            session.start()
            self.states.put(
                EpisodeState(
                    episode_id=episode_id,
                    sample_id=request.sample_id,
                    task_id=task.index,
                    attempt=session.attempt,
                    session=session.snapshot(),
                    handle=cast(SharedEnv, env).handle() if shared else None,
                    owner=self.replica,
                    protocol=protocol,
                )
            )
            return session
        except BaseException as exc:
            self.drop_local(episode_id, close=True)
            error = (
                f"environment failure: {exc}"
                if isinstance(exc, LoraloopError)
                else f"start failed ({type(exc).__name__})"
            )
            if session is not None:  # stored as failed at start; none before it had an attempt index
                session.finish("env_error", error)
            self.log.warning("episode failed at start", fields={"episode": episode_id, "error": error})
            if not isinstance(exc, Exception) or isinstance(exc, (RedisError, StoreUnavailable)):  # Redis, store: 503
                raise
            raise HTTPException(500, error) from exc

    def _env_failed(self, state: EpisodeState, task: Task, exc: LoraloopError) -> EpisodeReply:
        """A step whose environment failed (not the agent): the episode ends as env_error, stored."""
        error = f"environment failure: {exc}"
        info = {"turn": steps_taken(state.session) + 1, "status": "env_error", "success": False, "error": error}
        if self.states.claim(state.episode_id):
            resumed = EpisodeSession.resume(self.store, None, task, state.session)
            self.end(self.over(state, resumed, "env_error", error, info))
        return EpisodeReply(episode_id=state.episode_id, observation=None, reward=0.0, done=True, info=info)

    def next_attempt(self, task_id: str) -> int:
        """A fresh attempt index; never one whose trajectory is already stored."""
        while True:
            attempt = self.states.next_attempt(task_id)
            if not self.store.exists(episode_key(self.task_name, self.run_id, task_id, attempt)):
                return attempt

    def drop_local(self, episode_id: str, close: bool) -> None:
        """Forget this process's env of an episode: closed (episode over) or detached (another replica goes on)."""
        with self.local_guard:
            env, _ = self.local.pop(episode_id, (None, 0))
        if env is not None:
            env.close() if close else cast(SharedEnv, env).detach()  # detached: only a shared kind's env

    def env_for(self, state: EpisodeState, task: Task) -> Env:
        """This process's env for the episode, attached anew when another replica took a turn since."""
        steps = steps_taken(state.session)
        with self.local_guard:
            env, seen = self.local.get(state.episode_id, (None, -1))
        if env is not None and seen == steps:
            return env
        kind = env_kind(task.env)
        if state.handle is None or kind.envs.attach is None:
            raise HTTPException(
                409,
                f"episode {state.episode_id} lives on replica {state.owner}: {task.env} "
                f"episodes stay in the process that started them; route its calls there",
            )
        if env is not None:
            self.drop_local(state.episode_id, close=False)
        env = kind.envs.attach(task, self.settings, state.handle)
        with self.local_guard:
            self.local[state.episode_id] = (env, steps)
        return env

    # --- ending episodes --------------------------------------------------------------------------------------

    def over(
        self,
        state: EpisodeState,
        session: EpisodeSession,
        status: str | None = None,
        error: str | None = None,
        info: dict[str, Any] | None = None,
    ) -> EpisodeState:
        """Note in a claimed episode's state how it ended (state.ending): its records, the status and error that
        override its outcome, and the info a step that ended it answers; what `end` stores, again if need be."""
        state.session = session.snapshot()
        state.ending = {
            "status": status,
            "error": error,
            "outcome": session.outcome.model_dump(),
            "info": info or {"turn": session.steps, "status": status, "success": False},
        }
        return state

    def end(self, state: EpisodeState) -> None:
        """Write a claimed episode that is over (`over`) to the store, then release its environment. A write that fails
        (the store unreachable) puts it back open with its environment kept (states.write_or_reopen), and the
        error goes on (503): the next call that ends it (a retried step, a cancel, the idle reaper) stores it once."""

        ending = state.ending or {}  # set by `over` before every call

        def write() -> EpisodeSession:
            session = EpisodeSession.resume(self.store, None, self.registry.get(state.task_id), state.session)
            session.outcome = EpisodeOutcome.model_validate(ending["outcome"])
            session.finish(ending["status"], ending["error"])
            return session

        session = write_or_reopen(self.states, state, write)
        with self.local_guard:
            here = state.episode_id in self.local
        if here:
            self.drop_local(state.episode_id, close=True)
        elif state.handle is not None and (release := env_kind(session.task.env).envs.release) is not None:
            release(state.handle)
        self.log.info(
            "episode ended",
            fields={
                "episode": state.episode_id,
                "status": session.outcome.status,
                "success": session.outcome.success,
            },
        )

    def stop(self, episode_id: str, status: str) -> bool:
        """End an open episode as `status` (cancelled, expired, interrupted); False when it is unknown or already over.
        An episode that is over already, its write failed before (state.ending), is stored as it ended.

        An episode bound to another replica's process is left to that replica (409 for a cancel), unless it is over.
        """
        with self.states.lock(episode_id):
            state = self.states.get(episode_id)
            if state is None:
                return False
            if state.ending is None and state.handle is None and state.owner != self.replica:
                if status == "expired":
                    return False
                raise HTTPException(409, f"episode {episode_id} lives on replica {state.owner}: cancel it there")
            if not self.states.claim(episode_id):
                return False
            if state.ending is None:
                resumed = EpisodeSession.resume(self.store, None, self.registry.get(state.task_id), state.session)
                self.over(state, resumed, status)
            self.end(state)
            return True

    def expire(self) -> None:
        """End episodes idle for longer than the timeout, whichever replica started them, and those over whose write
        failed (any replica's). One the store cannot take now stays open, its environment kept, and is tried again
        once idle for another timeout (its failed try counts as a use); the others still go."""
        for episode_id in self.states.idle(time.time() - self.idle_timeout_s):
            try:
                self.stop(episode_id, "expired")
            except Exception as exc:  # one episode's failure must not keep the others from being ended
                self.log.warning(
                    "idle episode not stored, kept open to try again", fields={"episode": episode_id, "error": exc}
                )

    def shut_down(self) -> None:
        """At the server's stop, each environment of this process: stored and closed when no other process can go
        on with its episode (`interrupt`), detached when a replica can (shared state, an attachable kind)."""
        shared = not isinstance(self.states, MemoryEpisodeStates)
        for episode_id in list(self.local):
            state = self.states.get(episode_id)
            if state is None:  # over already: nothing to store
                self.drop_local(episode_id, close=True)
            elif not shared or state.handle is None:
                self.interrupt(episode_id)
            else:  # shareable: it stays for a replica, or for this one restarted
                self.drop_local(episode_id, close=False)

    def interrupt(self, episode_id: str) -> None:
        """At shutdown, end and store an open episode of this process that no other process can go on with (every
        one in memory mode, a browser episode in Redis mode); a failure is logged, the others still stored.

        When the store cannot take it (after its own retries, LORALOOP_STORE_RETRY_S), the episode stays open as
        `interrupted` (state.ending) and its environment is released, since no process would find it after this
        one: in Redis mode any replica's idle reaper stores it once the store is back; in memory mode its state
        ends with this process, so it is lost, logged as an error naming it (run with Redis to keep it)."""
        try:
            self.stop(episode_id, "interrupted")
        except Exception as exc:  # one episode's failure must not keep the others from being stored
            kept = not isinstance(self.states, MemoryEpisodeStates) and self.states.get(episode_id) is not None
            (self.log.warning if kept else self.log.error)(
                "episode not stored at shutdown"
                + ("; kept open in Redis for a replica to store" if kept else ": lost"),
                fields={"episode": episode_id, "error": exc},
            )
            self.drop_local(episode_id, close=True)
