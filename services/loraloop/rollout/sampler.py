"""Plan a rollout: which tasks, how many attempts, and each episode's seed."""

from __future__ import annotations

import secrets
import time
from dataclasses import asdict, dataclass

from loraloop.rollout.experiments import Experiment
from loraloop.task_registry import Registry


@dataclass(frozen=True)
class EpisodeSpec:
    """Everything a worker needs to run one episode; plain JSON for the Celery message."""

    mode: str
    run_id: str
    task_registry: str
    task_id: str
    task_index: int
    attempt: int
    seed: int
    task_seed: int
    temperature: float
    policy: str
    model: str | None
    max_steps: int
    protocol: str = "text"
    screenshots: bool = False
    adapter: dict | None = None  # the adapter version `model` serves (Adapter fields), set by preflight.pin_adapters
    # The worker's server (None: the stack's vLLM) and the environment variable holding its key (never the key).
    model_url: str | None = None
    api_key_env: str | None = None
    # The HALO orchestrator (agents/halo.py): the manager's settings (experiments.Manager fields) or None, and
    # which of the Verified Action Cache, macros and recovery are on.
    manager: dict | None = None
    use_cache: bool = False
    use_macros: bool = False
    use_recovery: bool = False
    recovery_patience: int = 3

    def to_dict(self) -> dict:
        """The spec as a JSON-ready dict."""
        return asdict(self)

    @property
    def halo(self) -> bool:
        """True when the HALO orchestrator drives the episode (a manager, the cache, macros or recovery is on)."""
        return bool(self.manager or self.use_cache or self.use_macros or self.use_recovery)


def rollout_seed(task_seed: int, task_index: int, attempt: int) -> int:
    """Per-rollout seed = task_seed + task_index*1000 + attempt (the HALO seed's rule)."""
    return task_seed + task_index * 1000 + attempt


def new_run_id() -> str:
    """A sortable, unique run id: UTC time plus a short random suffix."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(2)


def plan_rollout(
    registry: Registry,
    registry_path: str,
    experiment: Experiment,
    *,
    run_id: str,
    subset: str | None,
    sample_size: int | None,
    rollouts_per_task: int,
    seed: int,
    task_seed: int,
    temperature: float | None,
    model: str | None = None,
) -> list[EpisodeSpec]:
    """The episodes of a rollout, tasks in registry order, attempts 0..rollouts_per_task-1."""
    if rollouts_per_task < 1:
        raise ValueError(f"--rollouts_per_task must be at least 1, got {rollouts_per_task}")
    tasks = registry.select(subset, sample_size, seed)
    temp = experiment.temperature if temperature is None else temperature
    return [
        EpisodeSpec(
            mode=experiment.name,
            run_id=run_id,
            task_registry=registry_path,
            task_id=task.index,
            task_index=i,
            attempt=k,
            seed=rollout_seed(task_seed, i, k),
            task_seed=task_seed,
            temperature=temp,
            policy=experiment.resolved.backend,
            model=model or experiment.model,
            max_steps=experiment.max_steps,
            protocol=experiment.protocol,
            screenshots=experiment.screenshots,
            model_url=experiment.resolved.url,
            api_key_env=experiment.resolved.api_key_env,
            manager=experiment.manager.model_dump() if experiment.manager else None,
            use_cache=experiment.vac,
            use_macros=experiment.macros,
            use_recovery=experiment.recovery,
            recovery_patience=experiment.recovery_patience,
        )
        for i, task in enumerate(tasks)
        for k in range(rollouts_per_task)
    ]
