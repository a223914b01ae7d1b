"""Browsing stored episodes without reading them all on every view: the runs in a store, and per run an index
object (`indexes/<mode>/<run_id>.json`: one line of figures per episode) that is built once and rebuilt only
when the run has gained episodes since. The trajectory viewer and reports page through these."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass

from loraloop.store.backends import Store
from loraloop.store.trajectories import (
    PREFIX,
    Episode,
    MalformedTrajectory,
    parse_episode,
    run_prefix,
    task_and_attempt,
)

INDEX_VERSION = 3  # 2: entries hold the policy and the task's split; 3: the HALO orchestrator's counts


@dataclass(frozen=True)
class RunEntry:
    """A run of one mode (experiment) and how many episodes it holds."""

    mode: str
    run_id: str
    episodes: int


@dataclass(frozen=True)
class EpisodeEntry:
    """What a list of episodes shows of one, read from its object once; `corrupt` holds why it cannot be read."""

    key: str
    task_id: str
    attempt: int
    success: bool = False
    reward: float = 0.0
    steps: int = 0
    status: str = ""
    error: str | None = None
    model: str | None = None  # the served name that sampled it (`<adapter>-v<k>` or the base model)
    category: str = ""  # the task's family
    split: str = ""  # the task's split (train, test…)
    policy: str = ""  # openai (a served model) or scripted (a teacher)
    manager_calls: int = 0  # the HALO orchestrator's counts (episode_end; 0 for a plain worker)
    cache_hits: int = 0
    cache_misses: int = 0
    corrupt: str | None = None

    @property
    def outcome(self) -> str:
        """solved, failed (by the agent), error (environment or service) or corrupt."""
        if self.corrupt:
            return "corrupt"
        if self.success:
            return "solved"
        return "error" if self.error else "failed"


def episode_keys(store: Store, prefix: str) -> list[str]:
    """The episode objects under a prefix (screenshots and other files beside them left out)."""
    return [k for k in store.list(prefix) if k.endswith(".jsonl")]


def runs(store: Store) -> list[RunEntry]:
    """Every run in the store, newest run id first, with its episode count."""
    counts: Counter[tuple[str, str]] = Counter()
    for key in episode_keys(store, PREFIX):
        parts = key.split("/")
        if len(parts) >= 4:
            counts[(parts[1], parts[2])] += 1
    return sorted(
        (RunEntry(mode, run, n) for (mode, run), n in counts.items()), key=lambda r: (r.run_id, r.mode), reverse=True
    )


def describe(key: str, data: bytes) -> tuple[EpisodeEntry, Episode | None]:
    """One episode object's figures and the parsed episode; a corrupt object gives an entry that says why,
    and no episode."""
    try:
        episode = parse_episode(key, data)
    except MalformedTrajectory as exc:
        task, attempt = task_and_attempt(key) or (key.rsplit("/", 1)[-1], 0)
        return EpisodeEntry(key, task, attempt, corrupt=str(exc)), None
    models = [s.model for s in episode.steps if s.model]
    return EpisodeEntry(
        key,
        episode.start.task_id,
        episode.start.attempt_idx,
        episode.success,
        episode.end.reward,
        episode.end.total_steps or len(episode.steps),
        episode.end.status,
        episode.end.error,
        models[0] if models else episode.start.worker_model,
        episode.start.category,
        episode.start.split,
        episode.start.policy,
        episode.end.manager_calls,
        episode.end.cache_hits,
        episode.end.cache_misses,
    ), episode


def entry(store: Store, key: str) -> EpisodeEntry:
    """One stored episode's figures (see `describe`)."""
    return describe(key, store.get_bytes(key))[0]


def index_key(mode: str, run_id: str) -> str:
    """Where a run's index object lives."""
    return f"indexes/{mode}/{run_id}.json"


def run_index(store: Store, mode: str, run_id: str) -> list[EpisodeEntry]:
    """A run's episodes as entries, from its index object when that covers every episode stored now, else read
    again and the index rewritten (a run still being played gains episodes). A run without episodes gets no
    index (a viewer asked for an unknown run writes nothing)."""
    keys = episode_keys(store, run_prefix(mode, run_id))
    if not keys:
        return []
    key = index_key(mode, run_id)
    if store.exists(key):
        stored = json.loads(store.get_bytes(key))
        if stored.get("version") == INDEX_VERSION and stored.get("keys") == len(keys):
            return [EpisodeEntry(**e) for e in stored["episodes"]]
    entries = [entry(store, k) for k in keys]
    store.put_bytes(
        key,
        json.dumps({"version": INDEX_VERSION, "keys": len(keys), "episodes": [asdict(e) for e in entries]}).encode(),
    )
    return entries


def select(entries: list[EpisodeEntry], *, task: str = "", outcome: str = "", model: str = "") -> list[EpisodeEntry]:
    """The entries whose task id contains `task`, whose outcome is `outcome` and whose model is `model`
    (an empty filter keeps all)."""
    return [
        e
        for e in entries
        if task in e.task_id and (not outcome or e.outcome == outcome) and (not model or e.model == model)
    ]
