"""Run one episode end to end: env, policy, trajectory; the trajectory is stored whatever happens."""
from __future__ import annotations

import time
from functools import lru_cache
from typing import Callable

from loraloop.agents.policy import OpenAIPolicy, Policy, ScriptedTeacher
from loraloop.agents.prompts import build_prompt
from loraloop.agents.web_teacher import ScriptedWebTeacher
from loraloop.envs.shell.env import ShellEnv
from loraloop.envs.shell.tools import TOOLS
from loraloop.envs.web.env import WebEnv
from loraloop.errors import EnvironmentFailure, ModelRequestError, ServiceUnavailable, TaskSkipped
from loraloop.logs import get_logger
from loraloop.rollout.sampler import EpisodeSpec
from loraloop.settings import Settings, get_settings
from loraloop.store import open_store
from loraloop.store.trajectories import EpisodeRecorder, obs_hash, parse_episode
from loraloop.tasks.real_format import WebTask
from loraloop.tasks.registry import Registry, Task, load_registry

OBS_SUMMARY_CHARS = 400


@lru_cache(maxsize=16)
def cached_registry(path: str) -> Registry:
    """Registries are read once per worker process."""
    return load_registry(path)


def make_env(spec: EpisodeSpec, task: Task, settings: Settings) -> ShellEnv | WebEnv:
    """The environment a task runs in: a browser for REAL tasks, a container for shell tasks."""
    if isinstance(task, WebTask):
        return WebEnv(task, settings, max_rounds=spec.max_steps, screenshots=spec.screenshots)
    return ShellEnv(task, settings, max_rounds=spec.max_steps, protocol=spec.protocol)


def make_policy(spec: EpisodeSpec, task: Task, settings: Settings, env: ShellEnv | WebEnv) -> Policy:
    """The experiment's policy: the scripted teacher or an OpenAI-compatible model."""
    if spec.policy == "scripted":
        if isinstance(env, WebEnv):
            return ScriptedWebTeacher(task, env.origin, page=lambda: env.observation)
        return ScriptedTeacher(task)
    return OpenAIPolicy(model=spec.model or settings.base_model_name, base_url=settings.vllm_url,
                        api_key=settings.vllm_api_key, temperature=spec.temperature,
                        max_tokens=settings.max_tokens, seed=spec.seed, timeout=settings.request_timeout_s,
                        retries=settings.model_retries, max_in_flight=settings.model_concurrency,
                        tools=TOOLS if spec.protocol == "tools" and isinstance(env, ShellEnv) else None,
                        stop=env.stop)


def save_screenshot(store, key: str, step: int, png: bytes | None) -> str | None:
    """Store the page's PNG next to the trajectory (`<episode>/step_003.png`) and return its key."""
    if not png:
        return None
    shot = f"{key.removesuffix('.jsonl')}/step_{step:03d}.png"
    store.put_bytes(shot, png)
    return shot


def stored_summary(store, key: str) -> dict | None:
    """The summary of an episode already in the store (None if absent): reruns skip it."""
    if not store.exists(key):
        return None
    end = parse_episode(key, store.get_bytes(key)).end
    return {"key": key, "steps": end.get("total_steps", 0), "skipped": True,
            **{k: end.get(k) for k in ("success", "reward", "status", "answer", "error")}}


def run_episode(spec: EpisodeSpec, settings: Settings | None = None,
                should_stop: Callable[[], bool] | None = None) -> dict:
    """Play one episode and store its trajectory; return a summary (success, steps, error, latencies).

    An episode whose key is already stored is not played again (a redelivered or resubmitted
    one); `should_stop` is asked before every step and ends the episode as cancelled, stored.
    """
    settings = settings or get_settings()
    log = get_logger("loraloop.rollout", run=spec.run_id, task=spec.task_id, attempt=spec.attempt)
    task = cached_registry(spec.task_registry).get(spec.task_id)
    store = open_store(settings=settings)
    recorder = EpisodeRecorder(store, spec.mode, spec.run_id, spec.task_id, spec.attempt)
    done_before = stored_summary(store, recorder.key)
    if done_before is not None:
        log.info("already stored, skipped")
        return {**done_before, "task_id": spec.task_id, "attempt": spec.attempt}
    env = make_env(spec, task, settings)
    recorder.start(task_id=spec.task_id, run_id=spec.run_id, mode=spec.mode, attempt_idx=spec.attempt,
                   task_seed=spec.task_seed, seed=spec.seed, task_registry=spec.task_registry,
                   env=task.env, policy=spec.policy, worker_model=spec.model or settings.base_model_name,
                   worker_temperature=spec.temperature, max_steps=spec.max_steps,
                   model_url=settings.vllm_url if spec.policy == "openai" else None,
                   use_manager=False, use_cache=False, use_macros=False, protocol=spec.protocol,
                   system_prompt=env.instructions, examples=env.examples, split=task.split,
                   category=task.category, goal=task.description,
                   prompt_style=env.prompt_style)
    started = time.perf_counter()
    outcome = {"success": False, "reward": 0.0, "status": "error", "error": None}
    steps = errors = 0
    step_ms: list[float] = []
    model_ms: list[float] = []
    try:
        policy = make_policy(spec, task, settings, env)  # before reset: a task it cannot play costs no container
        first = env.reset()
        recorder.records[0]["first_observation"] = first
        turns: list[tuple[str, str]] = []
        observation = first
        while True:
            if should_stop is not None and should_stop():
                outcome.update(status="cancelled")
                break
            messages = build_prompt(env.prompt_style, env.instructions, env.examples, first, turns,
                                    settings.prompt_char_budget)
            reply = policy.act(messages)
            step_started = time.perf_counter()
            shown = getattr(env, "last_screenshot", None)  # the page the model saw
            result = env.step(reply.text)
            error = result.info.get("error")
            errors += bool(error)
            recorder.step(step_idx=steps, observation=observation, obs_hash=obs_hash(observation),
                          obs_summary=observation[:OBS_SUMMARY_CHARS], raw_output=reply.text,
                          action=result.info.get("action_kind"), action_source=reply.source,
                          model=reply.model, last_action_error=error, reward=result.reward, done=result.done,
                          model_latency_ms=round(reply.latency_ms, 1),
                          elapsed_ms=round((time.perf_counter() - step_started) * 1000, 1),
                          completion_tokens=reply.completion_tokens, url=result.info.get("url"),
                          action_text=result.info.get("action"),
                          screenshot=save_screenshot(store, recorder.key, steps, shown))
            log.info("step", fields={"step": steps, "action": result.info.get("action_kind")})
            step_ms.append(recorder.records[-1]["elapsed_ms"])
            model_ms.append(recorder.records[-1]["model_latency_ms"])
            steps += 1
            if result.done:
                outcome.update(success=bool(result.info.get("success")), reward=result.reward,
                               status=result.info.get("status"), answer=result.info.get("answer"))
                break
            turns.append((reply.text, result.observation))
            observation = result.observation
    except TaskSkipped as exc:
        outcome.update(status="skipped", reason=str(exc))
        log.info("skipped", fields={"reason": exc})
    except (EnvironmentFailure, ServiceUnavailable, ModelRequestError) as exc:
        status = next(name for kind, name in ((EnvironmentFailure, "env_error"), (ServiceUnavailable, "service_error"),
                                              (ModelRequestError, "model_error")) if isinstance(exc, kind))
        outcome.update(status=status, error=str(exc))
        log.warning("episode failed", fields={"error": exc})
    except Exception as exc:  # still store what was collected, then surface the bug
        outcome.update(status="crash", error=f"{type(exc).__name__}: {exc}")
        recorder.end(total_steps=steps, wall_time_sec=round(time.perf_counter() - started, 3),
                     error_count=errors, **outcome)
        raise
    finally:
        env.close()
    stored = recorder.end(total_steps=steps, wall_time_sec=round(time.perf_counter() - started, 3),
                          error_count=errors, **outcome)
    if not stored:
        log.warning("a copy of this episode was stored first; this one is dropped")
    return {"key": recorder.key, "task_id": spec.task_id, "attempt": spec.attempt, "steps": steps,
            "duplicate": not stored, "step_ms": step_ms, "model_ms": model_ms, **outcome}
