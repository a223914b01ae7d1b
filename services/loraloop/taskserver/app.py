"""The Task Server API that AReaL's TaskServerWorkflow speaks, over any task registry and env kind.

Each episode runs as an EpisodeSession (rollout/session.py), so what the Task Server stores is
what a rollout worker stores. Episode state lives where every replica reaches it (Redis when
LORALOOP_BROKER_URL is set, memory otherwise). A kind whose environment another process can attach
to (the shell: its container, with the shell's state saved after each command) lets a call land on
any replica, or a restarted one; a kind whose environment lives in one process (the web: a browser
context) is served by the replica that started the episode, and a call reaching another replica
is a 409 that says so. Every episode served is written to the trajectory store when it ends:
completed, cancelled, expired, failed at start, or interrupted (open when this process stopped, in
memory mode or a browser episode). Errors follow FastAPI's {"detail": …} convention.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from contextlib import asynccontextmanager
from typing import Any, Literal

from fastapi import Depends, FastAPI, HTTPException
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field, StrictInt, StrictStr
from redis import RedisError

from loraloop import http_guards
from loraloop.envs import env_kind
from loraloop.envs.base import Env, EnvOptions
from loraloop.errors import ConfigError, LoraloopError
from loraloop.http_guards import RequestBody
from loraloop.logs import get_logger
from loraloop.rollout.session import EpisodeSession, steps_taken
from loraloop.rollout.states import EpisodeState, EpisodeStates, MemoryEpisodeStates, RedisEpisodeStates, sweeping
from loraloop.service.book import without_credentials
from loraloop.settings import Settings
from loraloop.store import open_store
from loraloop.store.trajectories import episode_key
from loraloop.task_registry import Registry, Task

ERRORS = {
    404: {"description": "unknown sample or episode"},
    400: {"description": "bad sample id or config, or a step or cancel after the end"},
    401: {"description": "missing or wrong bearer token (LORALOOP_TASK_SERVER_TOKEN)"},
    409: {"description": "the episode lives on another replica"},
    413: {"description": "the request body is over LORALOOP_API_MAX_BODY_BYTES"},
    429: {"description": "LORALOOP_API_MAX_IN_FLIGHT starts and steps are running: try again (Retry-After)"},
    503: {"description": "Redis (LORALOOP_BROKER_URL) does not answer: try again (Retry-After)"},
    500: {
        "description": "the environment could not start (the message says how); a failure during an "
        "episode ends it instead: done, info.status env_error, info.error"
    },
}
MAX_ACTION_CHARS = 65536  # longer than any command or tool call an agent needs; more is refused (422)
EPISODE_ID = Field(max_length=128, description="the id start returned")
bearer = HTTPBearer(auto_error=False, description="LORALOOP_TASK_SERVER_TOKEN; needed only when the server has one")


class StartRequest(RequestBody):
    """POST /api/episode/start."""

    sample_id: StrictInt | StrictStr = Field(description="a task's index string, or its position as an int")
    config: dict = Field(
        default_factory=dict,
        description="protocol: text | tools; the kind's own settings (tau2: "
        "econfig.user_llm, econfig.user_llm_base_url, "
        "econfig.solo_mode); kept with the episode",
    )


class Action(RequestBody):
    """An agent action: text in the task's protocol (a tool call travels as its JSON text)."""

    type: str = Field("text", max_length=32)
    content: str = Field(max_length=MAX_ACTION_CHARS)


class StepRequest(RequestBody):
    """POST /api/episode/step."""

    episode_id: str = EPISODE_ID
    action: Action


class CancelRequest(RequestBody):
    """POST /api/episode/cancel."""

    episode_id: str = EPISODE_ID


class Observation(BaseModel):
    """An observation: the whole opening chat (`messages`) or the next environment text (`text`)."""

    type: Literal["messages", "text"]
    content: str | list[dict[str, str]]


class EpisodeReply(BaseModel):
    """What start and step return (AReaL's shape): at the end the observation is null and info has the outcome."""

    episode_id: str
    observation: Observation | None
    reward: float
    done: bool
    info: dict[str, Any]


class Health(BaseModel):
    """GET /api/health."""

    status: str
    active_episodes: int
    task_name: str


class TaskInfo(BaseModel):
    """GET /api/task/info."""

    name: str
    num_samples: int
    max_episode_length: int
    observation_type: str
    action_type: str
    description: str
    env_kinds: list[str]


class Cancelled(BaseModel):
    """POST /api/episode/cancel."""

    status: Literal["cancelled"]
    episode_id: str


def open_states(settings: Settings, task_name: str) -> EpisodeStates:
    """Redis-backed states when a broker URL is set (shared, restart-proof), else this process's memory."""
    lock_timeout = settings.command_timeout_s * 3 + 60
    if settings.broker_url.startswith(("redis://", "rediss://")):
        return RedisEpisodeStates(settings.broker_url, task_name, lock_timeout)
    return MemoryEpisodeStates()


def create_app(
    registry: Registry,
    task_name: str,
    settings: Settings,
    idle_timeout_s: float = 300.0,
    run_id: str | None = None,
    states: EpisodeStates | None = None,
) -> FastAPI:
    """The Task Server API app for one registry; trajectories go to trajectories/<task_name>/<run_id>/."""
    states = states or open_states(settings, task_name)
    run_id = run_id or time.strftime("%Y%m%d", time.gmtime())
    store = open_store(settings=settings)
    replica = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
    local: dict[str, tuple[Env, int]] = {}  # this process's envs, with the step count they have seen
    local_guard = threading.Lock()
    log = get_logger("loraloop.taskserver", task=task_name, run=run_id)
    kinds = sorted({task.env for task in registry.tasks})

    def resolve(sample: int | str) -> Task:
        if isinstance(sample, str) and len(sample) > 256:
            raise HTTPException(400, f"sample_id of {len(sample)} characters: no task index is longer than 256")
        if isinstance(sample, int):
            if not 0 <= sample < len(registry.tasks):
                raise HTTPException(404, f"sample {sample} out of range 0..{len(registry.tasks) - 1}")
            return registry.tasks[sample]
        try:
            return registry.get(sample)
        except LoraloopError as exc:
            raise HTTPException(404, str(exc)) from exc

    def next_attempt(task_id: str) -> int:
        """A fresh attempt index; never one whose trajectory is already stored."""
        while True:
            attempt = states.next_attempt(task_id)
            if not store.exists(episode_key(task_name, run_id, task_id, attempt)):
                return attempt

    def drop_local(episode_id: str, close: bool) -> None:
        """Forget this process's env of an episode: closed (episode over) or detached (another replica goes on)."""
        with local_guard:
            env, _ = local.pop(episode_id, (None, 0))
        if env is not None:
            env.close() if close else env.detach()

    def env_for(state: EpisodeState, task: Task) -> Env:
        """This process's env for the episode, attached anew when another replica took a turn since."""
        steps = steps_taken(state.session)
        with local_guard:
            env, seen = local.get(state.episode_id, (None, -1))
        if env is not None and seen == steps:
            return env
        kind = env_kind(task.env)
        if state.handle is None or kind.attach is None:
            raise HTTPException(
                409,
                f"episode {state.episode_id} lives on replica {state.owner}: {task.env} "
                f"episodes stay in the process that started them; route its calls there",
            )
        if env is not None:
            drop_local(state.episode_id, close=False)
        env = kind.attach(task, settings, state.handle)
        with local_guard:
            local[state.episode_id] = (env, steps)
        return env

    def end(state: EpisodeState, session: EpisodeSession, status: str | None = None, error: str | None = None) -> None:
        """Write the episode to the store, then release its environment (the caller has claimed it)."""
        session.finish(status, error)
        with local_guard:
            here = state.episode_id in local
        if here:
            drop_local(state.episode_id, close=True)
        elif state.handle is not None and (release := env_kind(session.task.env).release) is not None:
            release(state.handle)
        log.info(
            "episode ended",
            fields={
                "episode": state.episode_id,
                "status": session.outcome["status"],
                "success": session.outcome["success"],
            },
        )

    def stop(episode_id: str, status: str) -> bool:
        """End an open episode as `status` (cancelled, expired, interrupted); False when it is unknown or already over.

        An episode bound to another replica's process is left to that replica (409 for a cancel).
        """
        with states.lock(episode_id):
            state = states.get(episode_id)
            if state is None:
                return False
            if state.handle is None and state.owner != replica:
                if status == "expired":
                    return False
                raise HTTPException(409, f"episode {episode_id} lives on replica {state.owner}: cancel it there")
            if not states.claim(episode_id):
                return False
            end(state, EpisodeSession.resume(store, None, registry.get(state.task_id), state.session), status)
            return True

    def expire() -> None:
        """End episodes idle for longer than the timeout, whichever replica started them."""
        for episode_id in states.idle(time.time() - idle_timeout_s):
            stop(episode_id, "expired")

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        with sweeping(expire, idle_timeout_s, log, "taskserver-expiry"):
            yield
        shared = not isinstance(states, MemoryEpisodeStates)
        for episode_id in list(local):
            state = states.get(episode_id)
            if state is None:  # over already: nothing to store
                drop_local(episode_id, close=True)
            elif not shared or state.handle is None:
                interrupt(episode_id)
            else:  # shareable: it stays for a replica, or for this one restarted
                drop_local(episode_id, close=False)

    def interrupt(episode_id: str) -> None:
        """At shutdown, end and store an open episode of this process that no other process can go on with (every
        one in memory mode, a browser episode in Redis mode); a failure is logged, the others still stored."""
        try:
            stop(episode_id, "interrupted")
        except Exception as exc:  # one episode's failure must not keep the others from being stored
            log.warning("episode not stored at shutdown", fields={"episode": episode_id, "error": exc})

    async def authorised(credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> None:
        """With LORALOOP_TASK_SERVER_TOKEN set, refuse (401) a call without `Authorization: Bearer <that token>`.
        On the event loop, like the in-flight cap: a refused call never takes a worker thread."""
        if not http_guards.token_ok(settings.task_server_token, credentials):
            raise HTTPException(
                401,
                "missing or wrong bearer token (LORALOOP_TASK_SERVER_TOKEN)",
                headers={"WWW-Authenticate": "Bearer"},
            )

    app = FastAPI(title=f"loraloop task server: {task_name}", lifespan=lifespan)
    http_guards.install(app, settings.api_max_body_bytes)
    http_guards.unavailable(app, (RedisError,), "Redis (the episodes' state)", without_credentials(settings.broker_url))
    guarded = [Depends(authorised)]
    slow = [*guarded, Depends(http_guards.InFlightCap(settings.api_max_in_flight, "episode starts and steps"))]

    @app.get("/api/health", response_model=Health)
    async def health() -> Health:
        """Liveness and how many episodes are open (across replicas when shared). On the event loop: it needs
        no worker thread, so it answers while slow steps hold them."""
        return Health(status="healthy", active_episodes=states.count(), task_name=task_name)

    @app.get("/api/task/info", response_model=TaskInfo, dependencies=guarded)
    async def info() -> TaskInfo:
        """What this server serves: its tasks, the longest episode and the environment kinds."""
        return TaskInfo(
            name=task_name,
            num_samples=len(registry.tasks),
            max_episode_length=max((env_kind(k).max_steps for k in kinds), default=0),
            observation_type="text",
            action_type="text",
            env_kinds=kinds,
            description="; ".join(env_kind(k).description for k in kinds) + f" (registry {registry.name})",
        )

    @app.post("/api/episode/start", response_model=EpisodeReply, responses=ERRORS, dependencies=slow)
    def start(request: StartRequest) -> EpisodeReply:
        """Start an episode for a sample (its index string, or its position as an int). Everything the request
        names is checked before an environment is made (400 naming the field); from then on any failure releases
        the environment, and until then this process holds it where shutdown finds it."""
        task = resolve(request.sample_id)
        kind = env_kind(task.env)
        protocol = request.config.get("protocol", "text")
        if not isinstance(protocol, str) or protocol not in kind.protocols:
            raise HTTPException(
                400, f"config.protocol must be one of {list(kind.protocols)} for {task.env} tasks, got {protocol!r}"
            )
        episode_id = str(uuid.uuid4())
        shared = kind.attach is not None
        try:
            env = kind.make_env(
                task,
                settings,
                EnvOptions(protocol=protocol, episode_id=episode_id, shared=shared, config=request.config),
            )
        except ConfigError as exc:  # the start's config names something this server does not take
            raise HTTPException(400, str(exc)) from exc
        with local_guard:
            local[episode_id] = (env, 0)
        session = None
        try:
            session = EpisodeSession(
                store,
                env,
                task,
                mode=task_name,
                run_id=run_id,
                attempt=next_attempt(task.index),
                char_budget=settings.prompt_char_budget,
                policy="task-server",
                protocol=protocol,
                max_steps=env.max_rounds,
                sample_id=request.sample_id,
                episode_id=episode_id,
                config=request.config,
            )
            session.start()
            states.put(
                EpisodeState(
                    episode_id=episode_id,
                    sample_id=request.sample_id,
                    task_id=task.index,
                    attempt=session.attempt,
                    session=session.snapshot(),
                    handle=env.handle() if shared else None,
                    owner=replica,
                    protocol=protocol,
                )
            )
        except BaseException as exc:
            drop_local(episode_id, close=True)
            error = (
                f"environment failure: {exc}"
                if isinstance(exc, LoraloopError)
                else f"start failed ({type(exc).__name__})"
            )
            if session is not None:  # stored as failed at start; none before it had an attempt index
                session.finish("env_error", error)
            log.warning("episode failed at start", fields={"episode": episode_id, "error": error})
            if not isinstance(exc, Exception) or isinstance(exc, RedisError):  # an interrupt or exit; Redis down: 503
                raise
            raise HTTPException(500, error) from exc
        info = {"max_turns": env.max_rounds, "sample_id": request.sample_id, "turn": 0}
        tools = kind.tools(protocol, task)
        if tools:  # a client speaking native tool calls sends these with its model requests
            info["tools"] = tools
        return EpisodeReply(
            episode_id=episode_id,
            observation=Observation(type="messages", content=session.prompt()),
            reward=0.0,
            done=False,
            info=info,
        )

    @app.post("/api/episode/step", response_model=EpisodeReply, responses=ERRORS, dependencies=slow)
    def step(request: StepRequest) -> EpisodeReply:
        """Apply one action; at the end the observation is null and the info carries the outcome."""
        episode_id = request.episode_id
        with states.lock(episode_id):
            state = states.get(episode_id)
            if state is None:
                if states.finished(episode_id):
                    raise HTTPException(400, f"episode {episode_id} has already ended (it is stored)")
                raise HTTPException(404, f"unknown episode {episode_id!r}")
            task = registry.get(state.task_id)
            try:
                env = env_for(state, task)
                session = EpisodeSession.resume(store, env, task, state.session)
                result = session.act(request.action.content, source="client")
            except LoraloopError as exc:  # the environment failed, not the agent: the episode ends, stored
                if states.claim(episode_id):
                    end(
                        state,
                        EpisodeSession.resume(store, None, task, state.session),
                        "env_error",
                        f"environment failure: {exc}",
                    )
                return EpisodeReply(
                    episode_id=episode_id,
                    observation=None,
                    reward=0.0,
                    done=True,
                    info={
                        "turn": steps_taken(state.session) + 1,
                        "status": "env_error",
                        "success": False,
                        "error": f"environment failure: {exc}",
                    },
                )
            with local_guard:
                local[episode_id] = (env, session.steps)
            if not result.done:
                state.session = session.snapshot()
                state.handle = env.handle() if state.handle is not None else None
                states.put(state)
                return EpisodeReply(
                    episode_id=episode_id,
                    observation=Observation(type="text", content=result.observation),
                    reward=0.0,
                    done=False,
                    info={"turn": result.info["turn"]},
                )
            if states.claim(episode_id):
                end(state, session)
        keep = ("turn", "status", "success", "answer", "num_turns")
        return EpisodeReply(
            episode_id=episode_id,
            observation=None,
            reward=result.reward,
            done=True,
            info={k: result.info.get(k) for k in keep},
        )

    @app.post(
        "/api/episode/cancel",
        response_model=Cancelled,
        responses={k: ERRORS[k] for k in (400, 401, 404, 409)},
        dependencies=guarded,
    )
    def cancel(request: CancelRequest) -> Cancelled:
        """End an episode early, store its trajectory and release its environment."""
        if not stop(request.episode_id, "cancelled"):
            if states.finished(request.episode_id):
                raise HTTPException(400, f"episode {request.episode_id} has already ended (it is stored)")
            raise HTTPException(404, f"unknown episode {request.episode_id!r}")
        return Cancelled(status="cancelled", episode_id=request.episode_id)

    return app
