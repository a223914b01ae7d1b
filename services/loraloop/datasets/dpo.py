"""DPO pairs: in one state, an action that worked against one that did not (TRL preference format).

Two sources, as in the HALO seed: (1) in a state several episodes reached, an error-free action
against an erroring one; (2) a better and a worse episode of the same task aligned step by step:
where they still share the state (the same history) and act differently, the successful episode's
action is chosen over the failed one's. Pairing only within a state keeps every pair a fair
comparison, and grouping by state makes the alignment linear in the number of steps. `default`
aligns every successful episode with every failed one; `progress_ranked` only the best-ranked
episode (datasets/states.rank: progress, steps, recovery actions) with the worst, when the best made
more progress or got a higher return, whether or not it succeeded.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from loraloop.datasets.states import State, assistant, by_progress, merit, rank
from loraloop.store.trajectories import Episode


def _distinct(states: list[State]) -> list[State]:
    """One state per distinct action (the first seen), so each pair is written once."""
    found: dict[str, State] = {}
    for state in states:
        found.setdefault(state.canonical or state.action, state)
    return list(found.values())


def dpo_rows(
    task_id: str, episodes: list[Episode], states_of: dict[str, list[State]], *, pairing: str, top_percent: float
) -> Iterator[dict]:
    """The preference pairs of one task."""
    site = episodes[0].start.category
    if pairing == "progress_ranked":
        ranked, progress = rank(episodes), by_progress(episodes)
        best, worst = ranked[0], ranked[-1]
        better = {best.key} if merit(best, progress) > merit(worst, progress) else set()
        worse = {worst.key} if better else set()
    else:
        better, worse = {e.key for e in episodes if e.success}, {e.key for e in episodes if not e.success}
    groups: dict[str, list[tuple[State, str]]] = defaultdict(list)
    for episode in episodes:
        for state in states_of[episode.key]:
            groups[state.key].append((state, episode.key))
    source = "progress_ranked" if pairing == "progress_ranked" else "aligned"
    for group in groups.values():
        pairs: dict[tuple[str, str], tuple[State, State, str]] = {}
        clean = _distinct([s for s, _ in group if not s.error])
        for bad in _distinct([s for s, _ in group if s.error]):
            for good in clean[:1]:
                pairs.setdefault((good.canonical or good.action, bad.action), (good, bad, "error"))
        winners = _distinct([s for s, key in group if key in better and not s.error])
        losers = _distinct([s for s, key in group if key in worse])
        for good in winners:
            for bad in losers:
                if good.canonical != bad.canonical:
                    pairs.setdefault((good.canonical or good.action, bad.canonical or bad.action), (good, bad, source))
        for good, bad, kind in pairs.values():
            yield {
                "prompt": good.prompt,
                "chosen": assistant(good.action),
                "rejected": assistant(bad.action),
                "task_id": task_id,
                "site_id": site,
                "state_key": f"{kind}_{good.key}_{good.step_idx}",
            }
