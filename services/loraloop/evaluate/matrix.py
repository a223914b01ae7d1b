"""An evaluation matrix under one id: every experiment on the same sampled tasks, its plan and results kept
in the store (`evals/<eval_id>/`), so the same id run again goes on where it stopped and adds experiments
to the same tasks, and an id cannot be reused for other tasks."""

from __future__ import annotations

import json

from loraloop.errors import ConfigError
from loraloop.store.backends import Store
from loraloop.store.integrity import modes_of

PLAN_FIELDS = ("task_registry", "subset", "sample_size", "rollouts_per_task", "seed", "task_seed", "temperature")


def plan_key(eval_id: str) -> str:
    """Where an evaluation's plan is stored."""
    return f"evals/{eval_id}/plan.json"


def claim(store: Store, eval_id: str, plan: dict) -> bool:
    """Record the plan (which tasks, how many attempts, which seeds) under the id, written once; True when the
    id is new. The same id with another plan fails naming the differing field, since its episodes would be
    of other tasks than the ones stored under it; so does an id that runs not planned by an evaluation
    (`loraloop rollout --run_id`) already have."""
    wanted = {name: plan.get(name) for name in PLAN_FIELDS}
    if not store.exists(plan_key(eval_id)):
        taken = modes_of(store, eval_id)
        if taken:
            raise ConfigError(
                f"--eval_id {eval_id} is the id of runs no evaluation planned ({', '.join(taken)}): "
                "their tasks may be others; give a new --eval_id"
            )
    if store.put_new(plan_key(eval_id), json.dumps(wanted, indent=2).encode()):
        return True
    stored = json.loads(store.get_bytes(plan_key(eval_id)))
    for name in PLAN_FIELDS:
        if stored.get(name) != wanted[name]:
            raise ConfigError(
                f"--eval_id {eval_id} was run with --{name} {stored.get(name)!r}, not "
                f"{wanted[name]!r}: its tasks would differ; give a new --eval_id"
            )
    return False


def save_results(store: Store, eval_id: str, rows: list, runs: list[tuple[str, str]]) -> str:
    """The evaluation's figures (one entry per experiment) beside its plan; returns the key. Rewritten on
    every run of the id: they are derived from the episodes, which are never overwritten."""
    key = f"evals/{eval_id}/results.json"
    results = [
        {
            "experiment": r.experiment,
            "model": r.model,
            "run": f"{m}/{run}",
            "tasks": r.tasks,
            "episodes": r.episodes,
            "solved": r.solved,
            "success_rate": r.success_rate,
            "ci95": list(r.interval),
            "k": r.k,
            "pass_at_k": r.pass_at_k,
            "pass_hat_k": r.pass_hat_k,
            "median_steps": r.median_steps,
            "mean_reward": r.mean_reward,
            "errors": r.errors,
            "retries": r.retries,
            "corrupt": r.corrupt,
        }
        for r, (m, run) in zip(rows, runs)
    ]
    store.put_bytes(key, json.dumps(results, indent=2).encode())
    return key
