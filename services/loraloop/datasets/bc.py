"""Behavioural cloning rows: error-free steps of successful episodes, TRL prompt/completion format."""
from __future__ import annotations

import math
from typing import Iterator

from loraloop.datasets.states import State, assistant, rank
from loraloop.store.trajectories import Episode


def bc_rows(task_id: str, episodes: list[Episode], states_of: dict[str, list[State]], *, pairing: str,
            top_percent: float) -> Iterator[dict]:
    """The BC rows of one task: every successful episode, or (progress_ranked) the top ceil(n*P) of them."""
    chosen = [e for e in rank(episodes) if e.success]
    if pairing == "progress_ranked":
        chosen = chosen[:math.ceil(len(episodes) * top_percent)]
    for episode in chosen:
        for state in states_of[episode.key]:
            if state.error:
                continue
            yield {"prompt": state.prompt, "completion": assistant(state.action), "action": state.action,
                   "task_id": task_id, "site_id": episode.start.category, "step_idx": state.step_idx,
                   "action_source": state.action_source, "mode": episode.start.mode,
                   "run_id": episode.start.run_id}
