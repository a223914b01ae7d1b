"""Is every episode of a run there, once and whole? A run's plan (`plans/<mode>/<run_id>.json`: every episode key
its jobs planned) against what the store holds, each object read back against the SHA-256 in its metadata.

`loraloop store verify --run RUN` prints this and exits 1 when an episode is missing, duplicated or corrupt.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

from loraloop.errors import ConfigError
from loraloop.store.backends import Store, sha256
from loraloop.store.browse import episode_keys
from loraloop.store.trajectories import PREFIX, MalformedTrajectory, parse_episode, run_prefix


def plan_key(mode: str, run_id: str) -> str:
    """Where a run's plan lives."""
    return f"plans/{mode}/{run_id}.json"


def record_plan(store: Store, mode: str, run_id: str, keys: list[str]) -> None:
    """Add a job's planned episode keys to its run's plan (a run submitted again with more episodes grows it)."""
    key = plan_key(mode, run_id)
    planned = json.loads(store.get_bytes(key))["keys"] if store.exists(key) else []
    if set(keys) <= set(planned):
        return
    store.put_bytes(
        key, json.dumps({"mode": mode, "run_id": run_id, "keys": sorted(set(planned) | set(keys))}).encode()
    )


@dataclass
class RunCheck:
    """What `verify_run` found."""

    mode: str
    run_id: str
    planned: int | None  # None: no plan stored (episodes written before plans, or by hand)
    stored: int
    missing: list[str] = field(default_factory=list)
    unplanned: list[str] = field(default_factory=list)
    duplicates: list[list[str]] = field(default_factory=list)  # objects holding the same (task, attempt)
    corrupt: dict[str, str] = field(default_factory=dict)  # key -> why
    unverified: int = 0  # objects without a checksum in their metadata

    @property
    def ok(self) -> bool:
        """True when nothing is missing, duplicated or corrupt."""
        return not (self.missing or self.duplicates or self.corrupt)


def modes_of(store: Store, run_id: str) -> list[str]:
    """The modes (experiments) that have a run of this id, from its episodes and its plan."""
    found = {key.split("/")[1] for key in store.list(f"{PREFIX}/") if key.split("/")[2:3] == [run_id]}
    found |= {key.split("/")[1] for key in store.list("plans/") if key.endswith(f"/{run_id}.json")}
    return sorted(found)


def verify_run(store: Store, run_id: str, mode: str | None = None) -> RunCheck:
    """Check one run: planned but absent, stored twice, or damaged (checksum or records)."""
    if mode is None:
        modes = modes_of(store, run_id)
        if len(modes) != 1:
            raise ConfigError(
                f"run {run_id!r}: "
                + (
                    f"found under several modes ({', '.join(modes)}); name one with --mode"
                    if modes
                    else f"no episodes or plan in {store.url}"
                )
            )
        mode = modes[0]
    stored = episode_keys(store, run_prefix(mode, run_id))
    key = plan_key(mode, run_id)
    planned = json.loads(store.get_bytes(key))["keys"] if store.exists(key) else None
    check = RunCheck(mode, run_id, None if planned is None else len(planned), len(stored))
    if planned is not None:
        check.missing = sorted(set(planned) - set(stored))
        check.unplanned = sorted(set(stored) - set(planned))
    holders: dict[tuple[str, int], list[str]] = defaultdict(list)
    for key in stored:
        data = store.get_bytes(key)
        expected = store.checksum(key)
        if expected is None:
            check.unverified += 1
        elif expected != (actual := sha256(data)):
            check.corrupt[key] = f"bytes changed since written (sha256 {actual[:12]}…, written {expected[:12]}…)"
            continue
        try:
            episode = parse_episode(key, data)
        except MalformedTrajectory as exc:
            check.corrupt[key] = str(exc)
            continue
        holders[(episode.start.task_id, episode.start.attempt_idx)].append(key)
    check.duplicates = [keys for keys in holders.values() if len(keys) > 1]
    return check


def report(check: RunCheck) -> str:
    """The check as lines a person reads."""
    plan = "no plan stored" if check.planned is None else f"{check.planned} planned"
    lines = [
        f"run {check.run_id} ({check.mode}): {plan}, {check.stored} stored, {len(check.missing)} missing, "
        f"{len(check.duplicates)} duplicated, {len(check.corrupt)} corrupt, {check.unverified} without a checksum"
    ]
    lines += [f"  missing    {key}" for key in check.missing]
    lines += [f"  duplicate  {' = '.join(keys)}" for keys in check.duplicates]
    lines += [f"  corrupt    {key}: {why}" for key, why in check.corrupt.items()]
    lines += [f"  unplanned  {key}" for key in check.unplanned]
    return "\n".join(lines)
