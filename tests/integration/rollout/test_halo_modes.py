"""Every smol_* mode of configs/experiments.yaml on the embedded default: SmolLM2 on vLLM CPU as worker and
manager, one bundled shell task in Docker and one bundled web task in Chromium, each step recorded with who
chose it and why, and the episode's counters derived from its steps.

The adapter modes (smol_worker_bc, smol_worker_dpo, smol_pure_grpo) run on the base model here (the plan's
`model` override): no adapter is trained in this test, only the modes' shapes are played."""

import pytest

from loraloop.rollout.experiments import load_experiments
from loraloop.rollout.sampler import plan_rollout
from loraloop.rollout.session import orchestrator_counts
from loraloop.service.client import execute
from loraloop.store import open_store
from loraloop.store.records import NO_HALO
from loraloop.store.trajectories import iter_episodes
from loraloop.task_registry import load_registry

TASKS = (
    ("configs/tasks/os", "test+count-ext", "test-count-ext-00000"),
    ("configs/tasks/web", "test+shopzon", "loraloop.shop-3"),
)
SOURCES = {"worker", "manager", "cache", "macro", "recovery"}
GATES = {"warm_start", "repeated_error", "loop", "error_streak", "high_stakes"}
MAX_STEPS = 4


def halo(step):
    """The step's HALO part, empty where it has none."""
    return step.halo or NO_HALO


@pytest.mark.usefixtures("docker_ready")
def test_every_smol_mode_plays_and_records_its_orchestrator(vllm_url, sites_url, settings_for):
    settings = settings_for(vllm_url=vllm_url, sites_url=sites_url, max_tokens=64, request_timeout_s=300)
    experiments = {
        name: e.model_copy(update={"max_steps": MAX_STEPS})
        for name, e in load_experiments("configs/experiments.yaml").items()
        if name.startswith("smol_")
    }
    assert len(experiments) == 7
    specs = []
    for name, experiment in experiments.items():
        for registry, subset, task_id in TASKS:
            planned = plan_rollout(
                load_registry(registry),
                registry,
                experiment,
                run_id=name,
                subset=subset,
                sample_size=None,
                rollouts_per_task=1,
                seed=1,
                task_seed=7,
                temperature=None,
                model="SmolLM2-135M-Instruct",
            )
            specs += [s for s in planned if s.task_id == task_id]
    summaries = execute(specs, settings, concurrency=7, quiet=True)
    assert len(summaries) == 14 and all(s.status in ("completed", "round_limit") for s in summaries), summaries
    store = open_store(settings=settings)
    for name, experiment in experiments.items():
        episodes = list(iter_episodes(store, f"trajectories/{name}/{name}/"))
        assert {e.start.env for e in episodes} == {"shell", "web"}, name
        for episode in episodes:
            start, steps, end = episode.start, episode.steps, episode.end
            assert (start.use_manager, start.use_cache, start.use_macros, start.use_recovery) == (
                bool(experiment.manager),
                experiment.vac,
                experiment.macros,
                experiment.recovery,
            ), name
            assert start.manager_model == (experiment.manager.model if experiment.manager else None)
            assert start.manager_url == (vllm_url if experiment.manager else None)
            assert 1 <= len(steps) <= MAX_STEPS and {s.action_source for s in steps} <= SOURCES, (name, steps)
            assert end.model_dump(include=set(orchestrator_counts([]))) == orchestrator_counts(steps)
            for step in steps:
                assert halo(step).manager_called <= (halo(step).gate in GATES), step  # a call always names its gate
                assert (step.action_source == "macro") == bool(halo(step).macro) or step.action_source == "worker"
                assert (step.action_source == "recovery") == bool(halo(step).recovery), step
                if step.action_source in ("worker", "cache") and step.last_action_error is None:
                    assert (halo(step).cache_event is not None) == experiment.vac, step
            for before, last, step in zip(steps, steps[1:], steps[2:]):  # the same error twice: recovery acts
                calm = not any(halo(s).recovery or halo(s).manager_called for s in (before, last))
                if (
                    experiment.recovery
                    and calm
                    and last.last_action_error
                    and before.last_action_error == last.last_action_error
                ):
                    assert halo(step).recovery == "repeated_error", (name, step)
            for step, after in zip(steps, steps[1:]):  # then the manager decides, on the trigger's gate
                if experiment.manager and halo(step).recovery in ("repeated_error", "loop"):
                    assert halo(after).manager_called and halo(after).gate == halo(step).recovery, (name, after)
            if experiment.manager:  # the warm start: the manager is asked on the first step
                assert halo(steps[0]).manager_called and halo(steps[0]).gate == "warm_start", steps[0]
                assert halo(steps[0]).manager_error is None and end.manager_calls >= 1
            else:
                assert not any(
                    halo(s).manager_called or halo(s).gate or halo(s).cache_event or halo(s).recovery for s in steps
                ), name
