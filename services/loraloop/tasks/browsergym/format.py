"""BrowserGym tasks as loraloop tasks: one BrowserGym task id (`miniwob.click-button`) and the seeds of one split.

A task file holds one object a line, `{"task": "miniwob.click-button", "seeds": [0, 49]}`: the task type as
BrowserGym registers it (`browsergym/<task>` in Gymnasium's registry, after `import browsergym.<benchmark>`)
and the first and last seed of the split the file's set names (registry.yaml). An episode plays one of those
seeds: the one a driver asks for (`EnvOptions.config["seed"]`, checked against the split), else the one the
episode's rollout seed picks (`seeds[rollout_seed % count]`, so attempts 0..count-1 of a task cover every seed).

The task code is BrowserGym's own: `task_entrypoint` is the class (with its registered arguments) that
BrowserGym's `BrowserEnv` itself would build, looked up in BrowserGym's registry, never rewritten here.
"""

from __future__ import annotations

import difflib
import importlib
from dataclasses import dataclass
from functools import cache
from typing import Any

from loraloop.errors import ConfigError, TaskFormatError
from loraloop.tasks.base import TaskContext

FIELDS = {"task", "seeds"}


@dataclass(frozen=True)
class BrowserGymTask:
    """A BrowserGym task type with the seeds of one split; `index` is `<index_prefix><task>`."""

    index: str
    task_id: str  # BrowserGym's id: <benchmark>.<type>
    first_seed: int
    last_seed: int
    split: str = ""
    nondeterministic: bool = False
    source: str = ""
    env = "browsergym"

    @property
    def benchmark(self) -> str:
        """The BrowserGym benchmark (`miniwob`, `webarena`, ...): the package `browsergym.<benchmark>`."""
        return self.task_id.split(".", 1)[0]

    @property
    def type(self) -> str:
        """The task type within its benchmark (`click-button`)."""
        return self.task_id.split(".", 1)[1]

    @property
    def category(self) -> str:
        """The task type: `--subset click-button` selects it (in every split)."""
        return self.type

    @property
    def labels(self) -> tuple[str, ...]:
        """The benchmark, and `nondeterministic` where BrowserGym marks the type so."""
        return (self.benchmark,) + ("nondeterministic",) * self.nondeterministic

    @property
    def short_index(self) -> str:
        """BrowserGym's own id, accepted where it names one task of the registry."""
        return self.task_id

    @property
    def description(self) -> str:
        """What the task is: its id and its seeds (the goal comes from the page at reset)."""
        return f"{self.task_id}, seeds {self.first_seed}-{self.last_seed}"

    @property
    def seeds(self) -> range:
        """The seeds of this task's split."""
        return range(self.first_seed, self.last_seed + 1)

    def seed_for(self, rollout_seed: int | None, asked: Any = None) -> int:
        """The seed an episode plays: `asked` (a driver's explicit seed, which must be one of the split's),
        else the one the rollout seed picks. An asked seed outside the split is a ConfigError (a request's bad
        input: the Task Server answers 400) naming the seed, the task, its split, its seeds and where they are."""
        if asked is not None:
            if isinstance(asked, bool) or not isinstance(asked, int) or asked not in self.seeds:
                raise ConfigError(
                    f"task {self.index}: seed {asked!r} is outside split {self.split!r} of "
                    f"{self.task_id} (seeds {self.first_seed}-{self.last_seed}, {self.source})"
                )
            return asked
        return self.seeds[(rollout_seed or 0) % len(self.seeds)]


def benchmark_module(benchmark: str) -> str:
    """The Python package that registers a BrowserGym benchmark's tasks (`browsergym.miniwob`)."""
    return f"browsergym.{benchmark}"


@cache
def registered(benchmark: str) -> dict[str, bool]:
    """Every task id BrowserGym registers for a benchmark, with its `nondeterministic` mark (imports the package
    once; fails naming the package to install)."""
    import gymnasium as gym

    try:
        importlib.import_module(benchmark_module(benchmark))
    except ImportError as exc:
        raise ConfigError(
            f"BrowserGym benchmark {benchmark!r} needs the package {benchmark_module(benchmark)} "
            f"(pip install browsergym-{benchmark}): {exc}"
        ) from exc
    prefix = f"browsergym/{benchmark}."
    return {
        name.removeprefix("browsergym/"): bool(spec.nondeterministic)
        for name, spec in gym.envs.registry.items()
        if name.startswith(prefix)
    }


def check_task_id(task_id: Any, where: str) -> bool:
    """Check that `task_id` names a registered BrowserGym task; return its `nondeterministic` mark.
    An unknown one fails naming it, where it was read and the closest registered ids."""
    if not isinstance(task_id, str) or "." not in task_id.strip(".") or task_id != task_id.strip():
        raise TaskFormatError(
            f"{where}: field 'task' must be a BrowserGym task id '<benchmark>.<type>' "
            f"(e.g. 'miniwob.click-button'), got {task_id!r}"
        )
    try:
        known = registered(task_id.split(".", 1)[0])
    except ConfigError as exc:
        raise TaskFormatError(f"{where}: task {task_id!r}: {exc}") from exc
    if task_id not in known:
        close = difflib.get_close_matches(task_id, list(known), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else f" ({len(known)} registered)"
        raise TaskFormatError(
            f"{where}: unknown task type {task_id!r}: BrowserGym registers no 'browsergym/{task_id}'{hint}"
        )
    return known[task_id]


@cache
def task_entrypoint(task_id: str):
    """The callable BrowserGym's own `BrowserEnv` builds a task with (`task_entrypoint(seed=..., **kwargs)`): its
    registered class with its registered arguments, read from the env `gym.make` returns (no browser starts)."""
    import gymnasium as gym

    check_task_id(task_id, "browsergym")
    env = gym.make(f"browsergym/{task_id}", disable_env_checker=True)
    try:
        return env.unwrapped.task_entrypoint  # type: ignore[attr-defined]  # BrowserEnv's; mypy sees gymnasium's Env
    finally:
        env.close()


def one_seed_task(task_id: str, seed: int, where: str) -> BrowserGymTask:
    """A task of one seed of a registered BrowserGym task (`miniwob.click-button`), made in code rather than read
    from a registry (the parity check, the solver's bench); `where` names the caller in an unknown id's error."""
    return BrowserGymTask(
        index=task_id.split(".", 1)[1],
        task_id=task_id,
        first_seed=seed,
        last_seed=seed,
        nondeterministic=check_task_id(task_id, where),
    )


def owns(raw: Any) -> bool:
    """True for an object shaped like a BrowserGym task line (`task` and `seeds`, nothing else)."""
    return isinstance(raw, dict) and set(raw) == FIELDS and isinstance(raw.get("task"), str)


def parse_task(raw: Any, ctx: TaskContext) -> BrowserGymTask:
    """Check one task line and return it; errors name the file, the line's number and the field."""
    where = f"{ctx.file}: task {ctx.number}"
    if not isinstance(raw, dict):
        raise TaskFormatError(f"{where}: must be a JSON object, got {type(raw).__name__}")
    unknown = set(raw) - FIELDS
    if unknown:
        raise TaskFormatError(f"{where}: unknown field(s) {', '.join(sorted(unknown))} (fields: task, seeds)")
    nondeterministic = check_task_id(raw.get("task"), where)
    seeds = raw.get("seeds")
    if (
        not isinstance(seeds, list)
        or len(seeds) != 2
        or not all(type(s) is int and s >= 0 for s in seeds)
        or seeds[0] > seeds[1]
    ):
        raise TaskFormatError(
            f"{where}: field 'seeds' must be [first, last], two seeds 0 <= first <= last, got {seeds!r}"
        )
    return BrowserGymTask(
        index=f"{ctx.index_prefix}{raw['task']}",
        task_id=raw["task"],
        first_seed=seeds[0],
        last_seed=seeds[1],
        split=ctx.split,
        nondeterministic=nondeterministic,
        source=f"{ctx.file}#{ctx.number}",
    )
