"""Offline GRPO prompts: each state with the return of every action the stored episodes took there.

A sampled completion is rewarded with the best return among the episodes that took the same
action in the same state, -1 when it does not parse as an action, 0 when no episode tried it
(the HALO seed's rule); `action_reward` is that reward function.
"""

from __future__ import annotations

from collections.abc import Iterator

from loraloop.datasets.states import State, canonical_action
from loraloop.store.records import LEGACY_KIND
from loraloop.store.trajectories import Episode

UNPARSEABLE = -1.0
UNSEEN = 0.0


def grpo_rows(
    task_id: str, episodes: list[Episode], states_of: dict[str, list[State]], *, pairing: str, top_percent: float
) -> Iterator[dict]:
    """One row per distinct state of the task: the prompt and {canonical action: best return}."""
    prompts: dict[str, list[dict]] = {}
    returns: dict[str, dict[str, float]] = {}
    for episode in episodes:
        result = episode.end.reward
        for state in states_of[episode.key]:
            if state.canonical is None:
                continue
            if state.key not in prompts:
                prompts[state.key] = state.prompt
            best = returns.setdefault(state.key, {})
            best[state.canonical] = max(best.get(state.canonical, result), result)
    for key, prompt in prompts.items():
        yield {
            "prompt": prompt,
            "action_returns": returns[key],
            "task_id": task_id,
            "state_key": key,
            "site_id": episodes[0].start.category,
            "env": episodes[0].start.env,
        }


def action_reward(completion: str, action_returns: dict[str, float], env: str = LEGACY_KIND) -> float:
    """The reward of one sampled completion in its state, parsed as its environment kind parses actions."""
    action = canonical_action(completion, env)
    if action is None:
        return UNPARSEABLE
    return float(action_returns.get(action, UNSEEN))
