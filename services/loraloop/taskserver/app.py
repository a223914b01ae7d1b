"""The Task Server API that AReaL's TaskServerWorkflow speaks, over any shell task registry.

Episode state lives where every replica reaches it (Redis when LORALOOP_BROKER_URL is set,
memory otherwise) and the shell's own state is saved in its container after each command, so
a call may land on any replica, or on a restarted one, and the episode goes on. Every episode
served is written to the trajectory store when it ends: completed, cancelled or expired.
Errors follow FastAPI's {"detail": …} convention.
"""
from __future__ import annotations

import threading
import time
import uuid
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, Field

from loraloop.agents.prompts import build_messages
from loraloop.envs.shell import docker
from loraloop.envs.shell.env import PROTOCOLS, ShellEnv
from loraloop.envs.shell.protocol import ROUND_LIMIT
from loraloop.errors import LoraloopError
from loraloop.logs import get_logger
from loraloop.rollout.episode import OBS_SUMMARY_CHARS
from loraloop.taskserver.states import EpisodeState, EpisodeStates, MemoryEpisodeStates, RedisEpisodeStates
from loraloop.settings import Settings
from loraloop.store import open_store
from loraloop.store.trajectories import EpisodeRecorder, episode_key, obs_hash
from loraloop.tasks.registry import Registry

class StartRequest(BaseModel):
    """POST /api/episode/start."""

    sample_id: Any
    config: dict = Field(default_factory=dict)


class Action(BaseModel):
    """An agent action: text in AgentBench's protocol."""

    type: str = "text"
    content: str


class StepRequest(BaseModel):
    """POST /api/episode/step."""

    episode_id: str
    action: Action


class CancelRequest(BaseModel):
    """POST /api/episode/cancel."""

    episode_id: str


def open_states(settings: Settings, task_name: str, idle_timeout_s: float) -> EpisodeStates:
    """Redis-backed states when a broker URL is set (shared, restart-proof), else this process's memory."""
    lock_timeout = settings.command_timeout_s * 3 + 60
    if settings.broker_url.startswith(("redis://", "rediss://")):
        return RedisEpisodeStates(settings.broker_url, task_name, idle_timeout_s, lock_timeout)
    return MemoryEpisodeStates(idle_timeout_s)


def create_app(registry: Registry, task_name: str, settings: Settings, idle_timeout_s: float = 300.0,
               run_id: str | None = None, states: EpisodeStates | None = None) -> FastAPI:
    """The Task Server API app for one registry; trajectories go to trajectories/<task_name>/<run_id>/."""
    states = states or open_states(settings, task_name, idle_timeout_s)
    run_id = run_id or time.strftime("%Y%m%d", time.gmtime())
    store = open_store(settings=settings)
    shells: dict[str, ShellEnv] = {}  # this process's shells, reused while no other replica moved on
    shells_guard = threading.Lock()
    log = get_logger("loraloop.taskserver", task=task_name, run=run_id)

    def resolve(sample: Any):
        if isinstance(sample, bool) or not isinstance(sample, (str, int)):
            raise HTTPException(400, f"sample_id must be a string index or an integer, got {type(sample).__name__}")
        if isinstance(sample, int):
            if not 0 <= sample < len(registry.tasks):
                raise HTTPException(404, f"sample {sample} out of range 0..{len(registry.tasks) - 1}")
            return registry.tasks[sample]
        try:
            return registry.get(sample)
        except LoraloopError as exc:
            raise HTTPException(404, str(exc)) from exc

    def recorder_for(state: EpisodeState) -> EpisodeRecorder:
        recorder = EpisodeRecorder(store, task_name, run_id, state.task_id, state.attempt)
        recorder.records = state.records
        return recorder

    def next_attempt(task_id: str) -> int:
        """A fresh attempt index; never one whose trajectory is already stored."""
        while True:
            attempt = states.next_attempt(task_id)
            if not store.exists(episode_key(task_name, run_id, task_id, attempt)):
                return attempt

    def drop_shell(episode_id: str) -> ShellEnv | None:
        with shells_guard:
            env = shells.pop(episode_id, None)
        if env is not None:
            env.detach()
        return env

    def end(state: EpisodeState, status: str, *, success: bool = False, reward: float = 0.0,
            answer: str | None = None) -> None:
        """Write the episode to the store, then release its container (the caller has claimed it)."""
        recorder_for(state).end(success=success, reward=reward, status=status, answer=answer,
                                total_steps=state.turn, wall_time_sec=round(time.time() - state.started, 3),
                                error_count=state.errors, error=None)
        docker.remove(state.container)  # before the shell: it dies with the container, so no wait on it
        drop_shell(state.episode_id)
        log.info("episode ended", fields={"episode": state.episode_id, "status": status, "success": success})

    def expire() -> None:
        """End episodes idle for longer than the timeout, whichever replica started them."""
        for episode_id in states.idle(time.time() - idle_timeout_s):
            with states.lock(episode_id):
                state = states.get(episode_id)
                if state is not None and states.claim(episode_id):
                    end(state, "expired")

    def shell_for(state: EpisodeState, task) -> ShellEnv:
        """This process's shell for the episode, re-synced when another replica took a turn."""
        with shells_guard:
            env = shells.get(state.episode_id)
        if env is not None and env.turn == state.turn and env.session is not None and env.session.alive:
            return env
        if env is not None:
            drop_shell(state.episode_id)
        env = ShellEnv.attach(task, settings, episode_id=state.episode_id, container=state.container,
                              turn=state.turn, expected=state.expected, protocol=state.protocol)
        with shells_guard:
            shells[state.episode_id] = env
        return env

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        stop = threading.Event()

        def sweep() -> None:
            while not stop.wait(min(15.0, max(1.0, idle_timeout_s / 4))):
                try:
                    expire()
                except Exception as exc:  # a sweep that fails is retried on the next tick
                    log.warning("expiry sweep failed", fields={"error": exc})

        thread = threading.Thread(target=sweep, name="taskserver-expiry", daemon=True)
        thread.start()
        yield
        stop.set()
        for episode_id in list(shells):
            drop_shell(episode_id)  # shells end; containers and state stay for the next replica

    app = FastAPI(title=f"loraloop task server: {task_name}", lifespan=lifespan)

    @app.get("/api/health")
    def health() -> dict:
        """Liveness and how many episodes are open (across replicas when shared)."""
        return {"status": "healthy", "active_episodes": states.count(), "task_name": task_name}

    @app.get("/api/task/info")
    def info() -> dict:
        """What this server serves."""
        return {"name": task_name, "num_samples": len(registry.tasks), "max_episode_length": ROUND_LIMIT,
                "observation_type": "text", "action_type": "text",
                "description": f"AgentBench OS-interaction tasks from registry {registry.name}"}

    @app.post("/api/episode/start")
    def start(request: StartRequest) -> dict:
        """Start an episode for a sample (its index string, or its position as an int)."""
        task = resolve(request.sample_id)
        protocol = request.config.get("protocol", "text")
        if protocol not in PROTOCOLS:
            raise HTTPException(400, f"config.protocol must be one of {sorted(PROTOCOLS)}, got {protocol!r}")
        episode_id = str(uuid.uuid4())
        attempt = next_attempt(task.index)
        env = ShellEnv(task, settings, episode_id=episode_id, shared=True, protocol=protocol)
        recorder = EpisodeRecorder(store, task_name, run_id, task.index, attempt)
        recorder.start(task_id=task.index, run_id=run_id, mode=task_name, attempt_idx=attempt,
                       sample_id=request.sample_id, episode_id=episode_id, env="shell", policy="task-server",
                       worker_model=None, max_steps=ROUND_LIMIT, system_prompt=env.instructions,
                       examples=env.examples, split=task.split, category=task.category, config=request.config,
                       protocol=protocol)
        try:
            first = env.reset()
        except LoraloopError as exc:
            recorder.end(success=False, reward=0.0, status="env_error", total_steps=0, wall_time_sec=0.0,
                         error_count=1, error=str(exc))
            raise HTTPException(500, f"environment failure: {exc}") from exc
        recorder.records[0]["first_observation"] = first
        states.put(EpisodeState(episode_id=episode_id, sample_id=request.sample_id, task_id=task.index,
                                container=env.container, attempt=attempt, expected=env.expected, protocol=protocol,
                                records=recorder.records))
        with shells_guard:
            shells[episode_id] = env
        messages = build_messages(env.instructions, env.examples, first, [])
        return {"episode_id": episode_id, "observation": {"type": "messages", "content": messages},
                "reward": 0.0, "done": False,
                "info": {"max_turns": env.max_rounds, "sample_id": request.sample_id, "turn": 0}}

    @app.post("/api/episode/step")
    def step(request: StepRequest) -> dict:
        """Apply one action; at the end the observation is null and the info carries the outcome."""
        episode_id = request.episode_id
        with states.lock(episode_id):
            state = states.get(episode_id)
            if state is None:
                if states.finished(episode_id):
                    raise HTTPException(400, f"episode {episode_id} is done")
                raise HTTPException(404, f"unknown episode {episode_id!r}")
            task = registry.get(state.task_id)
            observation = (state.records[-1]["next_observation"] if state.turn
                           else state.records[0].get("first_observation", ""))
            started = time.perf_counter()
            try:
                env = shell_for(state, task)
                result = env.step(request.action.content)
            except LoraloopError as exc:
                raise HTTPException(500, f"environment failure: {exc}") from exc
            error = result.info.get("error")
            state.turn, state.errors = env.turn, state.errors + bool(error)
            recorder_for(state).step(
                step_idx=state.turn - 1, observation=observation, obs_hash=obs_hash(observation),
                obs_summary=observation[:OBS_SUMMARY_CHARS], raw_output=request.action.content,
                action=result.info.get("action_kind"), action_source="client", model=None,
                last_action_error=error, reward=result.reward, done=result.done,
                elapsed_ms=round((time.perf_counter() - started) * 1000, 1), next_observation=result.observation)
            if not result.done:
                states.put(state)
                return {"episode_id": episode_id, "observation": {"type": "text", "content": result.observation},
                        "reward": 0.0, "done": False, "info": {"turn": result.info["turn"]}}
            if states.claim(episode_id):
                end(state, result.info.get("status", "completed"), success=bool(result.info.get("success")),
                    reward=result.reward, answer=result.info.get("answer"))
        keep = ("turn", "status", "success", "answer", "num_turns")
        return {"episode_id": episode_id, "observation": None, "reward": result.reward, "done": True,
                "info": {k: result.info.get(k) for k in keep}}

    @app.post("/api/episode/cancel")
    def cancel(request: CancelRequest) -> dict:
        """End an episode early, store its trajectory and release its container."""
        with states.lock(request.episode_id):
            state = states.get(request.episode_id)
            if state is None or not states.claim(request.episode_id):
                raise HTTPException(404, f"unknown episode {request.episode_id!r}")
            end(state, "cancelled")
        return {"status": "cancelled", "episode_id": request.episode_id}

    return app
