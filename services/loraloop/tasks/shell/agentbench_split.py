"""A fixed, reproducible held-out slice of AgentBench's OS training set, stratified by task family.

AgentBench publishes 1,000 OS training tasks and keeps its dev and std sets for evaluation. Learning on the
training set is judged on a slice of it that nothing is trained or tuned on: a seeded random sample,
stratified by family so the slice has the set's mix. No library holds a task family for these tasks, so
`family` reads it off the tool the task's example solution uses (the description says too much: most
descriptions say "count"); the rules are ordered, the first that matches names the family.

`loraloop tasks split` writes the two id lists (configs/tasks/agentbench-os/heldout.txt and train.txt) that
the registry's two sets keep (tasks.base.read_id_list).
"""

from __future__ import annotations

import random
import re
from collections import defaultdict
from pathlib import Path

from loraloop.errors import TaskFormatError
from loraloop.tasks.base import Task
from loraloop.tasks.shell.format import ShellTask

# (family, a pattern over the example solution's code): the first that matches names the task's family
FAMILY_RULES = (
    ("processes", r"\bps\b|pgrep|/proc/|\btop\b|\bnproc\b|\bfree\b|uptime"),
    ("permissions", r"chmod|chown|-perm\b|stat -c ?['\"]?%[aAUG]|getent|/etc/passwd|useradd"),
    ("size", r"\bdu\b|\bdf\b|-size\b|stat -c ?['\"]?%s|wc -c"),
    ("time", r"-mtime|-mmin|-newer|-atime|-ctime|\bdate\b"),
    ("unique-sort", r"\buniq\b|\bsort\b"),
    ("text-search", r"\bgrep\b|\bawk\b|\bsed\b"),
)
OTHER = "other"  # files counted with find/ls, arithmetic in bash, processes (3 tasks): too few to stand alone
MIN_FAMILY = 20  # a family smaller than this joins OTHER, so every stratum gets held-out tasks


def family(task: ShellTask) -> str:
    """The family of an AgentBench OS task: the first FAMILY_RULES pattern its example's code matches, else
    OTHER (and OTHER for a task without an example)."""
    if task.example is None:
        return OTHER
    code = task.example.source(task.scripts_dir)
    return next((name for name, pattern in FAMILY_RULES if re.search(pattern, code)), OTHER)


def heldout_split(tasks: list[Task], size: int, seed: int) -> tuple[dict[str, str], dict[str, str]]:
    """({index: family} held out, {index: family} to train on): `size` tasks drawn with `seed`, each family
    getting its share of `size` (largest remainder), the rest for training; both in the tasks' order."""
    if not 0 < size < len(tasks):
        raise TaskFormatError(
            f"--size must be between 1 and {len(tasks) - 1} (the set has {len(tasks)} tasks), got {size}"
        )
    named = {task.index: family(task) for task in tasks if isinstance(task, ShellTask)}
    counts: dict[str, int] = defaultdict(int)
    for name in named.values():
        counts[name] += 1
    named = {index: name if counts[name] >= MIN_FAMILY else OTHER for index, name in named.items()}
    members: dict[str, list[str]] = defaultdict(list)
    for index, name in named.items():
        members[name].append(index)
    exact = {name: size * len(indices) / len(named) for name, indices in members.items()}
    quota = {name: int(share) for name, share in exact.items()}
    by_remainder = sorted(exact, key=lambda name: (quota[name] - exact[name], name))
    for name in by_remainder[: size - sum(quota.values())]:
        quota[name] += 1
    rng = random.Random(seed)
    chosen = {index for name in sorted(members) for index in rng.sample(members[name], quota[name])}
    held = {index: named[index] for index in named if index in chosen}
    return held, {index: named[index] for index in named if index not in chosen}


def write_id_list(path: Path, listed: dict[str, str], header: str) -> None:
    """An id list (`index family` a line) with a comment header, as tasks.base.read_id_list reads it."""
    lines = [f"# {line}" for line in header.splitlines()] + [f"{index} {name}" for index, name in listed.items()]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
