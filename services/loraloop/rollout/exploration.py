"""verify-exploration: play one task at two temperatures with the same seed and compare the actions.

Why: RL and DPO need the policy to explore. If an episode sampled at temperature B takes exactly the
actions of a greedy episode at temperature A, with the same per-rollout seed, then the temperature
is lost somewhere between the rollout spec and the model server and sampling collects nothing new.
The episodes run through the normal rollout code and are read back from the store, so the check
covers what training would read.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.table import Table

from loraloop.errors import LoraloopError
from loraloop.rollout.experiments import Experiment
from loraloop.rollout.sampler import EpisodeSpec, plan_rollout
from loraloop.settings import Settings
from loraloop.store import open_store
from loraloop.store.trajectories import Episode, episode_key, parse_episode
from loraloop.task_registry import Registry

PREVIEW_CHARS = 70


@dataclass(frozen=True)
class Comparison:
    """Two action sequences over their first `compared` steps; `first_difference` is a 0-based step."""

    compared: int
    first_difference: int | None

    @property
    def differs(self) -> bool:
        """True when the sequences differ within the compared steps."""
        return self.first_difference is not None


def plan_pair(
    registry: Registry,
    registry_path: str,
    experiment: Experiment,
    *,
    task_id: str,
    run_id: str,
    task_seed: int,
    temperatures: tuple[float, float],
) -> list[EpisodeSpec]:
    """One episode of `task_id` per temperature, each in its own run `<run_id>-a` / `<run_id>-b`.

    The task is planned alone, so both episodes get the same per-rollout seed (task_seed, task
    index 0, attempt 0) and differ only in temperature. Separate runs because a stored episode's key
    is mode/run/task/attempt: two episodes of one task and attempt in one run would overwrite each
    other. An unknown task id fails here with the registry's error, before any server is contacted.
    """
    single = Registry(registry.name, registry.env, [registry.get(task_id)])
    return [
        spec
        for suffix, temperature in zip("ab", temperatures)
        for spec in plan_rollout(
            single,
            registry_path,
            experiment,
            run_id=f"{run_id}-{suffix}",
            subset=None,
            sample_size=None,
            rollouts_per_task=1,
            seed=0,
            task_seed=task_seed,
            temperature=temperature,
        )
    ]


def read_pair(specs: list[EpisodeSpec], settings: Settings) -> list[Episode]:
    """Read back from the store the planned episodes, once played by the normal rollout code.

    Reading the stored trajectory rather than the in-memory summary checks the recorded provenance
    (worker_temperature, seed) and the actions exactly as dataset export will see them.
    """
    store = open_store(settings=settings)
    episodes = []
    for spec in specs:
        key = episode_key(spec.mode, spec.run_id, spec.task_id, spec.attempt)
        if not store.exists(key):
            raise LoraloopError(f"episode {key} was not stored in {store.url}")
        episodes.append(parse_episode(key, store.get_bytes(key)))
    return episodes


def actions(episode: Episode) -> list[str]:
    """The model's raw outputs in step order: what the policy chose, before the env parsed it."""
    return [step.raw_output for step in episode.steps]


def compare_actions(a: list[str], b: list[str], limit: int) -> Comparison:
    """Compare the first `limit` actions; a step that only one sequence has counts as a difference.

    An episode that ends earlier than the other took a different path, which is exploration too.
    """
    compared = min(limit, max(len(a), len(b)))
    for i in range(compared):
        if i >= len(a) or i >= len(b) or a[i] != b[i]:
            return Comparison(compared, i)
    return Comparison(compared, None)


def verdict(comparison: Comparison) -> str:
    """The one-line result scripts and people read (steps counted from 1)."""
    if comparison.differs:
        return f"exploration OK: action sequences differ at step {(comparison.first_difference or 0) + 1}"
    return f"exploration NOT verified: the first {comparison.compared} actions are identical"


def _preview(text: str | None) -> str:
    if text is None:
        return "[dim](episode ended)[/]"
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def comparison_table(episodes: list[Episode], comparison: Comparison) -> Table:
    """A Rich table of the compared steps side by side, so a person sees where the paths split."""
    a, b = (actions(e) for e in episodes)
    table = Table(title=f"{episodes[0].start.task_id} (seed {episodes[0].start.seed})")
    table.add_column("step", justify="right")
    for episode in episodes:
        table.add_column(f"T={episode.start.worker_temperature} ({episode.end.status})")
    table.add_column("same")
    for i in range(comparison.compared):
        x, y = (seq[i] if i < len(seq) else None for seq in (a, b))
        table.add_row(str(i + 1), _preview(x), _preview(y), "yes" if x == y else "[bold]no[/]")
    return table
