"""Every schema version ever written still reads, and nothing new is written that the record types do not declare.

tests/fixtures/records/ holds one episode per schema version: schema1_shell.jsonl as the untyped writer before
store/records.py wrote it (dicts, no schema_version; the fields of 532d4be^'s rollout/episode.py);
schema2_shell.jsonl as EpisodeSession wrote it with HALO's action cache on (its fields flat on each step), and
schema3_shell.jsonl as it writes today (HALO's fields in `halo`). A new SCHEMA_VERSION needs its own fixture (the
last test)."""

import re
import shutil
from pathlib import Path

import pytest

from loraloop.datasets.export import export
from loraloop.store.backends import FileStore
from loraloop.store.records import LEGACY_KIND, SCHEMA_VERSION, EpisodeStart, HaloStep, Step
from loraloop.store.trajectories import UndeclaredField, episode_end, parse_episode, stamp

FIXTURES = Path(__file__).parents[1] / "fixtures" / "records"
FILES = sorted(FIXTURES.glob("schema*_*.jsonl"))


def version_of(path: Path) -> int:
    return int(re.match(r"schema(\d+)_", path.name).group(1))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_an_episode_of_every_schema_version_reads(path):
    data = path.read_bytes()
    episode = parse_episode(path.name, data)
    assert episode.start.schema_version == version_of(path) and episode.start.env == LEGACY_KIND
    assert [s.step_idx for s in episode.steps] == [0, 1] and episode.steps[0].action == "bash"
    assert episode.end.success and episode.end.total_steps == 2 and episode_end(path.name, data) == episode.end
    expected = ["miss", "miss"] if version_of(path) >= 2 else [None, None]  # 2 and 3 ran HALO's cache
    assert [s.halo.cache_event if s.halo else None for s in episode.steps] == expected


def test_every_version_exports_next_to_the_others(tmp_path):
    """The exports read a store holding every version side by side: one BC row per step of each."""
    for path in FILES:
        target = tmp_path / "store" / "trajectories" / "teacher" / f"run{version_of(path)}"
        target.mkdir(parents=True)
        shutil.copy(path, target / "t__attempt_0.jsonl")
    manifest = export(FileStore(tmp_path / "store"), "trajectories", tmp_path / "ds", ["bc"])
    assert manifest["rows"]["bc"] == 2 * len(FILES)


def test_halo_fields_given_flat_are_nested_and_a_step_without_them_has_none():
    step = Step(step_idx=0, raw_output="x", gate="loop", manager_called=True)
    assert step.halo == HaloStep(gate="loop", manager_called=True) and "gate" not in step.model_dump()
    assert Step(step_idx=0, raw_output="x", manager_called=False, cache_event=None).halo is None
    assert Step.model_validate_json(step.model_dump_json()) == step  # today's nested form reads back the same


def test_a_record_with_an_undeclared_field_is_refused_on_write_naming_it():
    with pytest.raises(UndeclaredField, match=r"step record: field\(s\) halo_note, mood not declared in store/rec"):
        stamp(Step(step_idx=0, raw_output="x", mood="good", halo_note=1))
    kept = EpisodeStart.model_validate({"type": "episode_start", "task_id": "t", "from_an_old_writer": 1})
    assert kept.model_extra == {"from_an_old_writer": 1}  # read and kept as it was, but not writable again
    with pytest.raises(UndeclaredField, match="from_an_old_writer"):
        stamp(kept)
    assert stamp(Step(step_idx=0, raw_output="x")).schema_version == SCHEMA_VERSION


def test_every_schema_version_has_a_fixture():
    assert sorted(version_of(p) for p in FILES) == list(range(1, SCHEMA_VERSION + 1))
