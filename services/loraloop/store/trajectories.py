"""Episode trajectories in the store: keys, writing an episode once, reading it back typed (store/records.py)."""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TypeVar

from pydantic import ValidationError

from loraloop.store.backends import Store
from loraloop.store.records import RECORD, RECORDS, SCHEMA_VERSION, EpisodeEnd, EpisodeStart, Record, Step, dump

R = TypeVar("R", bound=Record)

PREFIX = "trajectories"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def run_prefix(mode: str, run_id: str) -> str:
    """trajectories/<mode>/<run_id>/: the folder of a run's episodes, with unsafe characters replaced."""
    return f"{PREFIX}/{_UNSAFE.sub('_', mode)}/{_UNSAFE.sub('_', run_id)}/"


def episode_key(mode: str, run_id: str, task_id: str, attempt: int) -> str:
    """trajectories/<mode>/<run_id>/<task>__attempt_<k>.jsonl, with unsafe characters replaced."""
    return f"{run_prefix(mode, run_id)}{_UNSAFE.sub('_', task_id)}__attempt_{attempt}.jsonl"


_KEY_TAIL = re.compile(r"([^/]+)__attempt_(\d+)\.jsonl$")


def task_and_attempt(key: str) -> tuple[str, int] | None:
    """The (task id as written in the key, attempt) an episode key ends with; None for another object."""
    match = _KEY_TAIL.search(key)
    return (match.group(1), int(match.group(2))) if match else None


def obs_hash(observation: str) -> str:
    """A short stable hash of an observation: the state key DPO pairing groups by."""
    return hashlib.sha256(observation.encode()).hexdigest()[:16]


class UndeclaredField(ValueError):
    """A record being written with a field its type does not declare (a writer's bug: declare it in records.py)."""


def stamp(record: Record, at: float | None = None) -> Record:
    """The record stamped with the schema version and the time (now, or `at`), as every writer stamps records. A record
    with a field its type does not declare is refused, naming it: readers keep such fields of old episodes, but
    nothing new is stored that the types do not name."""
    if record.model_extra:
        raise UndeclaredField(
            f"{record.type} record: field(s) {', '.join(sorted(record.model_extra))} not declared in store/records.py"
        )
    record.schema_version, record.timestamp = SCHEMA_VERSION, time.time() if at is None else at
    return record


class EpisodeRecorder:
    """Collects an episode's typed records in memory and writes the whole object once, at the end."""

    def __init__(self, store: Store, mode: str, run_id: str, task_id: str, attempt: int) -> None:
        self.store = store
        self.key = episode_key(mode, run_id, task_id, attempt)
        self.records: list[Record] = []
        self._written: bool | None = None

    def add(self, record: R, at: float | None = None) -> R:
        """Append one record (stamped with the schema version and the time, now or `at`) and return it."""
        self.records.append(stamp(record, at))
        return record

    def flush(self) -> bool:
        """Write all records as one object (whole or not at all), never over a stored episode.

        Returns False when the key already held an episode (a duplicate delivery of the same
        episode finished first); that copy stays and this one is dropped. Later calls do nothing.
        """
        if self._written is not None:
            return self._written
        self._written = self.store.put_new(self.key, b"".join(dump(r) for r in self.records))
        return self._written


@dataclass
class Episode:
    """A stored episode: its start record, steps and end record (a stored episode always has one)."""

    key: str
    start: EpisodeStart
    steps: list[Step] = field(default_factory=list)
    end: EpisodeEnd = field(default_factory=EpisodeEnd)

    @property
    def success(self) -> bool:
        """True when the episode ended solved."""
        return self.end.success


class MalformedTrajectory(ValueError):
    """A stored episode that cannot be read; the message names the key, line and field."""


def _record_type(line: bytes) -> object:
    """The `type` a line that is a JSON object names, as pydantic parsed it (Infinity and NaN included)."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value.get("type") if isinstance(value, dict) else None


def _records(key: str, data: bytes) -> list[EpisodeStart | Step | EpisodeEnd]:
    """Every record, typed; one validation for the whole object when it is clean, else the line at fault."""
    lines = [(n, line) for n, line in enumerate(data.splitlines(), 1) if line.strip()]
    try:
        return RECORDS.validate_json(b"[" + b",".join(line for _, line in lines) + b"]")
    except ValidationError:
        pass
    records = []
    for number, line in lines:  # slow path: name the line and field at fault
        try:
            records.append(RECORD.validate_json(line))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"][1:]) or "record"
            if error["type"] == "json_invalid":
                raise MalformedTrajectory(f"{key}:{number}: not JSON ({error['msg']})") from exc
            if error["type"] in ("union_tag_invalid", "union_tag_not_found", "model_attributes_type"):
                raise MalformedTrajectory(f"{key}:{number}: unknown record type {_record_type(line)!r}") from exc
            raise MalformedTrajectory(f"{key}:{number}: field {where!r}: {error['msg']}") from exc
    return records


def episode_end(key: str, data: bytes) -> EpisodeEnd:
    """The end record of a stored episode, read from its last line alone (a stored episode always ends with it);
    an object whose last line is not one is parsed whole, so its error names the key, line and field."""
    last = next((line for line in reversed(data.splitlines()) if line.strip()), b"")
    try:
        record = RECORD.validate_json(last)
    except ValidationError:
        record = None
    if isinstance(record, EpisodeEnd):
        return record
    return parse_episode(key, data).end


def parse_episode(key: str, data: bytes) -> Episode:
    """Parse one episode object (typed or written before the types); fail naming key and line."""
    start: EpisodeStart | None = None
    steps: list[Step] = []
    end: EpisodeEnd | None = None
    for number, record in enumerate(_records(key, data), 1):
        if isinstance(record, EpisodeStart):
            start, steps, end = record, [], None
        elif start is None:
            raise MalformedTrajectory(f"{key}:{number}: first record must be episode_start, got {record.type!r}")
        elif isinstance(record, Step):
            steps.append(record)
        else:
            end = record
    if start is None:
        raise MalformedTrajectory(f"{key}: empty episode")
    if end is None:
        raise MalformedTrajectory(f"{key}: no episode_end record")
    return Episode(key, start, steps, end)


def iter_episodes(store: Store, prefix: str = PREFIX, errors: list[str] | None = None) -> Iterator[Episode]:
    """Yield the episodes under a prefix, one at a time; malformed ones go to `errors` (or raise)."""
    for key in store.list(prefix):
        if not key.endswith(".jsonl"):
            continue
        try:
            yield parse_episode(key, store.get_bytes(key))
        except MalformedTrajectory as exc:
            if errors is None:
                raise
            errors.append(str(exc))
