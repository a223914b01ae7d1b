"""Every bundled web task (configs/tasks/web) on the bundled sites: each task's solution passes and its
wrong path fails, driven through loraloop's WebEnv in real Chromium by
ARIA role and accessible name. The sites' own protocol tests live with them (services/loraloop_sites/tests)."""

from __future__ import annotations

import pytest

from loraloop.envs.base import StepResult
from loraloop.envs.web.env import WebEnv
from loraloop.envs.web.teacher import ScriptedWebTeacher
from loraloop.settings import Settings
from loraloop.task_registry import load_registry

REGISTRY = load_registry("configs/tasks/web")


def play(env: WebEnv, teacher: ScriptedWebTeacher) -> StepResult:
    """Reset a fresh run and let the scripted teacher act until the episode ends; return the last step."""
    messages = [{"role": "user", "content": env.reset()[0]}]
    while True:
        result = env.step(teacher.act(messages).text)
        assert result.info.error is None, f"step {result.info.turn}: {result.info.error}"
        if result.done:
            return result
        messages.append({"role": "user", "content": result.observation})


@pytest.mark.parametrize("index", [t.index for t in REGISTRY.tasks])
def test_task_solution_passes_and_wrong_path_fails(sites_url, index):
    """Through the web environment itself: bids from its AX tree, its actions, REAL's grading."""
    task = REGISTRY.get(index)
    env = WebEnv(task, Settings(sites_url=sites_url), max_rounds=len(task.solution) + len(task.wrong_path) + 2)
    try:
        solved = play(env, ScriptedWebTeacher(task, env.origin))
        assert solved.info.success and solved.reward == 1.0, (
            f"solution fails evals {[r for r in solved.info.details['evals'] if not r['passed']]}"
        )
        wrong = play(env, ScriptedWebTeacher(task, env.origin, steps=task.wrong_path))
        assert wrong.info.success is False and wrong.reward == 0.0, "the wrong path passes every eval"
    finally:
        env.close()
