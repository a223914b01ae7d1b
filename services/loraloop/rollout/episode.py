"""Run one episode end to end for the rollout worker: env, policy, session; stored whatever happens."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from types import ModuleType
from typing import Any

from loraloop.agents.halo import HaloAgent, Tuning
from loraloop.agents.manager import MANAGER_RETRIES, Manager
from loraloop.agents.policy import OpenAIPolicy, Policy
from loraloop.envs.base import Env, EnvOptions
from loraloop.errors import EnvironmentFailure, ModelRequestError, ModelTimeout, ServiceUnavailable, TaskSkipped
from loraloop.kinds.registry import env_kind
from loraloop.logs import get_logger
from loraloop.rollout.endpoints import endpoint, server_url
from loraloop.rollout.sampler import EpisodeSpec
from loraloop.rollout.session import EpisodeSession
from loraloop.rollout.summary import EpisodeSummary
from loraloop.settings import Settings, get_settings
from loraloop.store import open_store
from loraloop.store.records import Adapter, Provenance, Step
from loraloop.store.trajectories import episode_end, episode_key
from loraloop.task_registry import Task, shared_registry

# The episode's status for each failure that is not the agent's (the first class that matches; ModelTimeout is a
# ServiceUnavailable, so it comes first).
FAILURES = (
    (EnvironmentFailure, "env_error"),
    (ModelTimeout, "model_timeout"),
    (ServiceUnavailable, "service_error"),
    (ModelRequestError, "model_error"),
)
# Failures of the infrastructure, not the policy, that may pass: the model server's (down, 5xx, timeout) and the
# environment's (a browser or container that did not start, a page that crashed). Worth playing the episode again.
REPLAYED = ("service_error", "model_timeout", "env_error")


def make_policy(spec: EpisodeSpec, task: Task, settings: Settings, env: Env) -> Policy:
    """The experiment's worker: the task kind's scripted teacher, transformers in this process (`local`), or a
    model on an OpenAI-compatible server (the spec's URL, else the stack's vLLM)."""
    kind = env_kind(task.env)
    if spec.policy == "scripted":
        return kind.envs.teacher(task, env)
    if spec.policy == "local":
        from loraloop.agents.local import LocalPolicy  # transformers and torch: only where asked for

        return LocalPolicy(
            spec.model or str(settings.model_dir),
            temperature=spec.temperature,
            max_tokens=settings.max_tokens,
            seed=spec.seed,
            stop=env.stop,
        )
    base_url, api_key = endpoint(spec.model_url, spec.api_key_env, settings)
    return OpenAIPolicy(
        model=spec.model or settings.base_model_name,
        base_url=base_url,
        api_key=api_key,
        temperature=spec.temperature,
        max_tokens=settings.max_tokens,
        seed=spec.seed,
        timeout=settings.request_timeout_s,
        retries=settings.model_retries,
        max_in_flight=settings.model_concurrency,
        tools=kind.envs.tools(spec.protocol, task),
        stop=env.stop,
        adapter=spec_adapter(spec),
    )


def make_agent(
    spec: EpisodeSpec, task: Task, settings: Settings, session: EpisodeSession, worker: Policy
) -> HaloAgent | None:
    """The HALO orchestrator over `worker` for a spec with a manager, the cache, macros or recovery; None for a
    worker alone. With macros on, their usage joins the env's instructions (the system prompt the episode
    records) before the episode starts, and the history's share of the prompt shrinks by as much, so that
    the prompt still fits the model's context."""
    if not spec.halo:
        return None
    env = session.live_env
    manager = make_manager(spec, task, settings, env) if spec.manager else None
    cache: Any = None
    vac: ModuleType | None = None
    macros: ModuleType | None = None
    if spec.use_cache:
        from loraloop.agents import vac as vac_module

        cache, vac = shared_cache(settings.broker_url, f"loraloop:{spec.mode}"), vac_module
    if spec.use_macros:
        from loraloop.agents import macros as macros_module

        macros = macros_module
        usage = macros_module.macro_help(env_kind(task.env))
        env.instructions += usage
        session.char_budget -= len(usage)
    tuning = Tuning(
        warm_start_steps=spec.manager["warm_start_steps"] if spec.manager else 0,
        error_streak=spec.manager["error_streak"] if spec.manager else 3,
        recovery_patience=spec.recovery_patience,
        use_recovery=spec.use_recovery,
    )
    return HaloAgent(
        worker, env_kind(task.env), task.index, manager=manager, cache=cache, vac=vac, macros=macros, tuning=tuning
    )


def make_manager(spec: EpisodeSpec, task: Task, settings: Settings, env: Env) -> Manager:
    """The spec's manager: its model on its OpenAI-compatible server (else the stack's vLLM), greedy, with the
    worker's stop strings and tools, and few retries (a manager that does not answer costs little)."""
    config = spec.manager or {}  # called only for a spec with a manager
    base_url, api_key = endpoint(config["url"], config["api_key_env"], settings)
    policy = OpenAIPolicy(
        model=config["model"],
        base_url=base_url,
        api_key=api_key,
        temperature=0.0,
        max_tokens=settings.max_tokens,
        seed=spec.seed,
        timeout=settings.request_timeout_s,
        retries=MANAGER_RETRIES,
        max_in_flight=settings.model_concurrency,
        tools=env_kind(task.env).envs.tools(spec.protocol, task),
        stop=env.stop,
    )
    return Manager(policy, config["model"], base_url)


@cache
def shared_cache(broker_url: str, namespace: str) -> Any:
    """The Verified Action Cache an experiment's episodes share: in Redis with a broker (every worker), else in
    this process's memory (opened once, so the process's episodes share it)."""
    from loraloop.agents.vac import open_action_cache

    return open_action_cache(broker_url or None, namespace)


def halo_provenance(spec: EpisodeSpec, settings: Settings) -> dict[str, Any]:
    """What episode_start records of the orchestrator: which parts are on, the manager's model and URL (never
    a key)."""
    manager = spec.manager or {}
    return {
        "use_manager": bool(manager),
        "manager_model": manager.get("model"),
        "manager_url": server_url(manager.get("url"), settings) if manager else None,
        "use_cache": spec.use_cache,
        "use_macros": spec.use_macros,
        "use_recovery": spec.use_recovery,
    }


def spec_adapter(spec: EpisodeSpec) -> Adapter | None:
    """The adapter version the spec's model serves (pinned when the job was planned), None for a base model."""
    return Adapter(**spec.adapter) if spec.adapter else None


def stored_summary(store, key: str) -> EpisodeSummary | None:
    """The summary of an episode already in the store (None if absent): reruns skip it. One read: the object, or
    its absence; only its end record is parsed."""
    try:
        data = store.get_bytes(key)
    except FileNotFoundError:
        return None
    end = episode_end(key, data)
    return EpisodeSummary(
        key=key,
        steps=end.total_steps,
        skipped=True,
        **end.model_dump(include={"success", "reward", "status", "answer", "error"}),
    )


def _session(spec: EpisodeSpec, settings: Settings, store, env, task, policy: Policy | None) -> EpisodeSession:
    """The episode's session: where it is stored (mode, run, attempt) and its provenance (seeds, registry, policy,
    model and the sampling its `policy` sends, adapter version, HALO's settings); `policy` is None when the
    episode ended before it had one (a task the policy cannot play)."""
    provenance = Provenance(
        task_seed=spec.task_seed,
        task_registry=spec.task_registry,
        policy=spec.policy,
        worker_model=spec.model or settings.base_model_name,
        worker_temperature=spec.temperature,
        max_steps=spec.max_steps,
        protocol=spec.protocol,
        model_url=server_url(spec.model_url, settings) if spec.policy == "openai" else None,
        adapter=spec_adapter(spec),
        sampling=getattr(policy, "sampling", None),  # what a model policy sends
        **halo_provenance(spec, settings),
    )
    return EpisodeSession(
        store,
        env,
        task,
        mode=spec.mode,
        run_id=spec.run_id,
        attempt=spec.attempt,
        seed=spec.seed,
        char_budget=settings.prompt_char_budget,
        provenance=provenance,
    )


def _timed(step: Step | None, log, step_ms: list[float | None], model_ms: list[float]) -> None:
    """Log the step an act() or note() just recorded and keep its times (the model's, where a model was asked:
    cache, macro and recovery steps ask none)."""
    if step is not None:
        log.info("step", fields={"step": step.step_idx, "action": step.action})
        step_ms.append(step.elapsed_ms)
        if step.model_latency_ms is not None:
            model_ms.append(step.model_latency_ms)


def run_episode(
    spec: EpisodeSpec,
    settings: Settings | None = None,
    should_stop: Callable[[], bool] | None = None,
    last_try: bool = True,
) -> EpisodeSummary:
    """Play one episode and store its trajectory; return a summary (success, steps, error, latencies).

    An episode whose key is already stored is not played again (a redelivered or resubmitted
    one); `should_stop` is asked before every step and ends the episode as cancelled, stored.
    When the model server or the environment fails it (REPLAYED) and this is not the `last_try`, nothing is
    stored: the summary says `retry`, and the caller plays the episode again from the start (its key stays free).
    """
    settings = settings or get_settings()
    log = get_logger("loraloop.rollout", run=spec.run_id, task=spec.task_id, attempt=spec.attempt)
    task = shared_registry(spec.task_registry).get(spec.task_id)
    store = open_store(settings=settings)
    done_before = stored_summary(store, episode_key(spec.mode, spec.run_id, spec.task_id, spec.attempt))
    if done_before is not None:
        log.info("already stored, skipped")
        return done_before.model_copy(update={"task_id": spec.task_id, "attempt": spec.attempt})
    env = env_kind(task.env).envs.make_env(
        task, settings, EnvOptions(max_steps=spec.max_steps, protocol=spec.protocol, screenshots=spec.screenshots)
    )
    session: EpisodeSession | None = None
    status = error = reason = None
    step_ms: list[float | None] = []  # every step record has its elapsed_ms; the type allows None for old ones
    model_ms: list[float] = []
    try:
        policy = make_policy(spec, task, settings, env)  # before reset: a task it cannot play costs no container
        session = _session(spec, settings, store, env, task, policy)
        agent = make_agent(spec, task, settings, session, policy)
        session.start()
        while not session.done:
            if should_stop is not None and should_stop():
                status = "cancelled"
                break
            if agent is not None:
                agent.step(session)
            else:
                reply = policy.act(session.prompt())
                session.act(reply.text, source=reply.source, reply=reply)
            _timed(session.last_step, log, step_ms, model_ms)
    except TaskSkipped as exc:
        status, reason = "skipped", str(exc)
        log.info("skipped", fields={"reason": exc})
    except tuple(kind for kind, _ in FAILURES) as exc:
        status, error = next(name for kind, name in FAILURES if isinstance(exc, kind)), str(exc)
        log.warning("episode failed", fields={"error": exc})
    except Exception as exc:  # still store what was collected, then surface the bug
        (session or _session(spec, settings, store, env, task, None)).finish("crash", f"{type(exc).__name__}: {exc}")
        raise
    finally:
        env.close()
    if status in REPLAYED and not last_try:
        log.warning("the episode failed (%s); it will be played again", status, fields={"error": error})
        return EpisodeSummary(task_id=spec.task_id, attempt=spec.attempt, status=status, error=error, retry=True)
    session = session or _session(spec, settings, store, env, task, None)  # it ended before it had a policy
    stored = session.finish(status, error, reason)
    if not stored:
        log.warning("a copy of this episode was stored first; this one is dropped")
    return session.summary().model_copy(
        update={
            "error": error,
            "reason": reason,
            "duplicate": not stored,
            "step_ms": step_ms,
            "model_ms": model_ms,
            "store_wait_s": round(store.waited_s, 1),
        }
    )
