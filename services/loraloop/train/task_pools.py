"""Which tasks an RL iteration rolls out: uniformly (the job's seeded sample), or from difficulty pools.

The difficulty pools follow prime-rl's `difficulty-pool` buffer (orchestrator/buffer.py): a task whose last group
was solved at a rate of at least `easy_border` is easy, at most `hard_border` hard, anything else (and a task not
played yet) normal. An iteration draws `easy_fraction` and `hard_fraction` of its tasks from the easy and hard pools,
a floor that rechecks them, and the rest from the normal pool; when that runs short, easy and hard fill in. Groups
of equal reward teach GRPO nothing (rl_batch drops them), so an always-solved or never-solved task costs rollouts
for no gradient (Tinker's `remove_constant_reward_groups` drops them after the fact; this draws fewer of them).
Written here because neither TRL nor prime-rl's buffer is a library that picks tasks for our rollout jobs: TRL
samples a prompt dataset, prime-rl's buffer is part of its orchestrator.

Pure functions of the rates, the task list and a seed: a run that goes on after a kill rebuilds the rates from its
stored iterations and draws the same tasks again.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

POOLS = ("easy", "normal", "hard")


@dataclass(frozen=True)
class PoolRules:
    """The pool borders and the share of an iteration each outer pool gets (prime-rl's field names)."""

    easy_border: float = 1.0  # last group's success rate at or above it: easy (1.0: every rollout solved it)
    hard_border: float = 0.0  # at or below it: hard (0.0: none did)
    easy_fraction: float = 0.1
    hard_fraction: float = 0.1

    def problems(self) -> list[str]:
        """What is wrong with these rules, one sentence each naming the flag and its value (empty when fine)."""
        wrong = [
            f"--{name} must be between 0 and 1, got {value}"
            for name, value in vars(self).items()
            if not 0.0 <= value <= 1.0
        ]
        if self.hard_border >= self.easy_border:
            wrong.append(
                f"--hard_border ({self.hard_border}) must be below --easy_border ({self.easy_border}): a task "
                "cannot be easy and hard at once"
            )
        if self.easy_fraction + self.hard_fraction > 1.0:
            wrong.append(
                f"--easy_fraction + --hard_fraction must be at most 1, got {self.easy_fraction} + {self.hard_fraction}"
            )
        return wrong


@dataclass
class Draw:
    """An iteration's tasks (in the order given) and, per pool, how many were drawn of how many it held."""

    tasks: list[str]
    drawn: dict[str, int] = field(default_factory=dict)
    held: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        """'easy 1/4, normal 6/10, hard 1/2' for the iteration table."""
        return ", ".join(f"{pool} {self.drawn[pool]}/{self.held[pool]}" for pool in POOLS)


def last_rates(groups: Iterable[tuple[str, bool]]) -> dict[str, float]:
    """Each task's success rate over its episodes in `groups` ((task, solved) pairs of one iteration)."""
    counts: dict[str, list[int]] = {}
    for task, solved in groups:
        tally = counts.setdefault(task, [0, 0])
        tally[0] += int(solved)
        tally[1] += 1
    return {task: solved / played for task, (solved, played) in counts.items()}


def pool_of(rate: float | None, rules: PoolRules) -> str:
    """A task's pool from its last group's success rate (None: not played yet, normal)."""
    if rate is None:
        return "normal"
    if rate >= rules.easy_border:
        return "easy"
    if rate <= rules.hard_border:
        return "hard"
    return "normal"


def draw(tasks: Sequence[str], rates: Mapping[str, float], size: int, seed: int, rules: PoolRules) -> Draw:
    """`size` distinct tasks (all of them when there are fewer), drawn with `seed` from the pools; returned in
    the order of `tasks`."""
    rng = random.Random(seed)
    pools: dict[str, list[str]] = {pool: [] for pool in POOLS}
    for task in tasks:
        pools[pool_of(rates.get(task), rules)].append(task)
    size = min(size, len(tasks))
    drawn: dict[str, list[str]] = {}
    for pool, share in (("easy", rules.easy_fraction), ("hard", rules.hard_fraction)):
        drawn[pool] = rng.sample(pools[pool], min(len(pools[pool]), round(size * share)))
    taken = len(drawn["easy"]) + len(drawn["hard"])
    drawn["normal"] = rng.sample(pools["normal"], min(len(pools["normal"]), size - taken))
    short = size - taken - len(drawn["normal"])
    if short:  # the normal pool ran out: the rest of the easy and hard tasks fill in
        rest = [(pool, t) for pool in ("easy", "hard") for t in pools[pool] if t not in drawn[pool]]
        for pool, task in rng.sample(rest, short):
            drawn[pool].append(task)
    chosen = {t for pool in POOLS for t in drawn[pool]}
    return Draw(
        tasks=[t for t in tasks if t in chosen],
        drawn={pool: len(drawn[pool]) for pool in POOLS},
        held={pool: len(pools[pool]) for pool in POOLS},
    )
