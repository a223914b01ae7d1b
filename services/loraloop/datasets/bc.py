"""Behavioural cloning rows: error-free steps of successful episodes, TRL prompt/completion format.

With `progress_ranked` pairing, a task's episodes are ranked (datasets/states.rank: progress, steps, recovery
actions) and the top ceil(n*P) are kept: a successful one, or one that made progress without succeeding
(HALO learns from how far an episode got); an episode that neither succeeded nor made progress is never kept.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from loraloop.datasets.states import State, assistant, rank
from loraloop.store.trajectories import Episode


def bc_rows(
    task_id: str, episodes: list[Episode], states_of: dict[str, list[State]], *, pairing: str, top_percent: float
) -> Iterator[dict]:
    """The BC rows of one task: every successful episode, or (progress_ranked) the top ceil(n*P) of the ranking
    that succeeded or made progress."""
    if pairing == "progress_ranked":
        chosen = [
            e
            for e in rank(episodes)[: math.ceil(len(episodes) * top_percent)]
            if e.success or (e.end.max_progress_score or 0.0) > 0.0
        ]
    else:
        chosen = [e for e in rank(episodes) if e.success]
    for episode in chosen:
        for state in states_of[episode.key]:
            if state.error:
                continue
            yield {
                "prompt": state.prompt,
                "completion": assistant(state.action),
                "action": state.action,
                "task_id": task_id,
                "site_id": episode.start.category,
                "step_idx": state.step_idx,
                "action_source": state.action_source,
                "mode": episode.start.mode,
                "run_id": episode.start.run_id,
            }
