"""Trajectory store on file://: whole-object writes, layout, malformed records, adapter versions."""

import json
import time

import pytest

from loraloop.errors import ConfigError, StoreUnavailable
from loraloop.settings import Settings
from loraloop.store import FileStore, open_store
from loraloop.store.backends import shown_store
from loraloop.store.records import SCHEMA_VERSION, EpisodeEnd, EpisodeStart
from loraloop.store.trajectories import EpisodeRecorder, MalformedTrajectory, episode_key, iter_episodes, parse_episode
from tests.helpers import record_episode


def test_layout_matches_the_seed():
    assert (
        episode_key("qwen_pure_zero", "r1", "v2.gomail-1", 2)
        == "trajectories/qwen_pure_zero/r1/v2.gomail-1__attempt_2.jsonl"
    )
    assert episode_key("m", "r", "a/../b", 0) == "trajectories/m/r/a_.._b__attempt_0.jsonl"


def test_file_store_roundtrip_and_escape(tmp_path):
    store = FileStore(tmp_path)
    key = record_episode(store)
    episodes = list(iter_episodes(store, "trajectories/mode"))
    assert len(episodes) == 1 and episodes[0].success and episodes[0].start.seed == 5
    assert episodes[0].key == key and len(episodes[0].steps) == 1
    assert not list(tmp_path.rglob("*.part"))
    with pytest.raises(ConfigError, match="escapes"):
        store.put_bytes("../x", b"")


def test_typed_records_name_the_field_at_fault_and_read_untyped_episodes(tmp_path):
    store = FileStore(tmp_path)
    store.put_bytes(
        "trajectories/m/r/t__attempt_0.jsonl",
        b'{"type": "episode_start", "task_id": "t"}\n{"type": "step", "step_idx": "first"}\n{"type": "episode_end"}\n',
    )
    store.put_bytes(
        "trajectories/m/r/t__attempt_1.jsonl",
        b'{"type": "episode_start", "task_id": "t"}\n{"type": "footnote"}\n{"type": "episode_end"}\n',
    )
    # An episode as loraloop wrote them before typed records: no schema_version, fields of its time.
    old = [
        {
            "type": "episode_start",
            "timestamp": 1.0,
            "task_id": "t",
            "run_id": "r",
            "mode": "m",
            "attempt_idx": 2,
            "seed": 7,
            "worker_model": "x",
            "system_prompt": "s",
            "examples": [],
            "first_observation": "Task: t",
            "use_manager": False,
        },
        {
            "type": "step",
            "timestamp": 2.0,
            "step_idx": 0,
            "observation": "Task: t",
            "raw_output": "Act: finish",
            "action": "finish",
            "model": None,
            "reward": 1.0,
            "done": True,
            "model_latency_ms": 3.5,
        },
        {
            "type": "episode_end",
            "timestamp": 3.0,
            "success": True,
            "reward": 1.0,
            "status": "completed",
            "total_steps": 1,
            "wall_time_sec": 0.1,
            "error_count": 0,
            "error": None,
        },
    ]
    store.put_bytes("trajectories/m/r/t__attempt_2.jsonl", "".join(json.dumps(r) + "\n" for r in old).encode())
    errors = []
    [episode] = iter_episodes(store, "trajectories", errors)
    assert errors == [
        "trajectories/m/r/t__attempt_0.jsonl:2: field 'step_idx': Input should be a valid integer, "
        "unable to parse string as an integer",
        "trajectories/m/r/t__attempt_1.jsonl:2: unknown record type 'footnote'",
    ]
    assert episode.start.schema_version == 1 and episode.start.seed == 7 and episode.start.prompt_style == "chat"
    assert episode.start.use_manager is False  # a field the types do not name is kept
    assert episode.steps[0].done and not episode.steps[0].terminated and episode.end.success
    fresh = EpisodeRecorder(store, "m", "r", "t", 3)
    fresh.add(EpisodeStart(task_id="t", run_id="r", seed=1))
    fresh.add(EpisodeEnd(success=False))
    assert fresh.flush()
    new = parse_episode(fresh.key, store.get_bytes(fresh.key))
    assert new.start.schema_version == SCHEMA_VERSION and new.end.run_id is None and new.start.run_id == "r"


def test_malformed_episode_is_named_and_skipped(tmp_path):
    store = FileStore(tmp_path)
    record_episode(store)
    store.put_bytes(
        "trajectories/mode/run1/bad__attempt_0.jsonl", b'{"type": "episode_start", "task_id": "bad"}\n{oops\n'
    )
    errors = []
    episodes = list(iter_episodes(store, "trajectories", errors))
    assert len(episodes) == 1
    assert errors == [
        "trajectories/mode/run1/bad__attempt_0.jsonl:2: not JSON (Invalid JSON: key must be a string "
        "at line 1 column 2)"
    ]
    with pytest.raises(MalformedTrajectory):
        list(iter_episodes(store, "trajectories"))


def test_unreachable_s3_is_tried_again_then_named():
    """Port 9 refuses: the store tries again with backoff for LORALOOP_STORE_RETRY_S, then names the URL."""
    settings = Settings(s3_endpoint_url="http://127.0.0.1:9", s3_access_key="a", s3_secret_key="b", store_retry_s=1.5)
    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match=r"unreachable: s3://bucket on http://127.0.0.1:9: gave up after 2 s"):
        open_store("s3://bucket", settings)
    assert time.monotonic() - started >= 1.5


def test_a_store_is_shown_without_host_folder_or_credentials(tmp_path):
    """What a reply names (a job's status, the run list, a 503): a folder by its last part, a bucket with its
    endpoint less the endpoint's user and password."""
    folder = FileStore(tmp_path / "kept" / "store")
    assert folder.shown == "file://…/store" and str(tmp_path) not in folder.shown
    assert shown_store(f"file://{tmp_path}/store/") == "file://…/store"
    shown = shown_store("s3://bucket/runs/a/", "http://user:s3cret@minio:9000")
    assert shown == "s3://bucket/runs/a on http://minio:9000"
    assert shown_store("s3://bucket") == "s3://bucket"  # AWS: no endpoint to name


def test_adapter_versions_count_up_and_a_rollback_finds_the_one_before(tmp_path):
    from loraloop.store import adapters

    store = FileStore(tmp_path / "store")
    folder = tmp_path / "lora"
    folder.mkdir()
    (folder / "adapter_config.json").write_text('{"r": 4}')
    (folder / "adapter_model.safetensors").write_bytes(b"weights")
    assert adapters.next_version(store, "a") == "v1"
    assert [adapters.upload(store, "a", folder, {"n": n}) for n in (1, 2, 3)] == ["v1", "v2", "v3"]
    assert adapters.versions(store, "a") == [1, 2, 3] and adapters.next_version(store, "a") == "v4"
    assert adapters.version_key("a", "v2", "metadata.json") == "adapters/a/v2/metadata.json"
    assert adapters.version_before([1, 2, 3], "v3") == "v2" and adapters.version_before([1, 2, 3], None) == "v3"
    assert adapters.version_before([1, 2, 3], "v1") is None and adapters.version_number("latest") is None
    assert adapters.read_metadata(store, "a")["n"] == 3 and adapters.read_metadata(store, "a", "v1")["n"] == 1
    with pytest.raises(ConfigError, match=r"adapter 'a' has no version 'v9' .*\(versions: v1, v2, v3\)"):
        adapters.read_metadata(store, "a", "v9")
    with pytest.raises(ConfigError, match="no adapter named 'b'"):
        adapters.read_metadata(store, "b")


def test_put_new_never_overwrites(tmp_path):
    store = FileStore(tmp_path)
    assert store.put_new("t/a.jsonl", b"first") is True
    assert store.put_new("t/a.jsonl", b"second") is False
    assert store.get_bytes("t/a.jsonl") == b"first" and list(store.list("t")) == ["t/a.jsonl"]


def test_a_folder_of_a_shown_store_goes_before_its_endpoint():
    """The rollout's summary line names where its episodes went: the run's folder after the bucket and prefix, the
    endpoint last (CI caught `s3://loraloop on http://…:28333/trajectories/…`), for every form shown_store gives."""
    from loraloop.store.backends import shown_under

    run = "trajectories/teacher/R1"
    assert shown_under(shown_store("s3://b/p/", "http://u:pw@minio:9000"), run) == (
        "s3://b/p/trajectories/teacher/R1/ on http://minio:9000"
    )
    assert shown_under(shown_store("s3://b"), run) == "s3://b/trajectories/teacher/R1/"
    assert shown_under(shown_store("file:///x/store/"), f"/{run}/") == "file://…/store/trajectories/teacher/R1/"
