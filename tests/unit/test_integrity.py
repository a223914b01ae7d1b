"""`loraloop store verify` on a file store: every episode planned, stored once, whole."""

import json
import os
import shutil

from loraloop.store.backends import CHECKSUM_XATTR, FileStore, sha256
from loraloop.store.integrity import plan_key, record_plan, verify_run
from tests.helpers import record_episode, run_cli


def test_every_object_carries_its_checksum(tmp_path):
    store = FileStore(tmp_path)
    key = record_episode(store)
    assert store.checksum(key) == sha256(store.get_bytes(key))
    store.put_bytes("indexes/x.json", b"{}")
    assert os.getxattr(tmp_path / "indexes" / "x.json", CHECKSUM_XATTR).decode() == sha256(b"{}")


def test_verify_names_what_is_missing_duplicated_corrupt_and_unverified(tmp_path):
    store = FileStore(tmp_path)
    keys = [record_episode(store, task=f"t-{i:05d}") for i in range(5)]
    lost = keys[4]
    record_plan(store, "mode", "run1", keys[:3])
    record_plan(store, "mode", "run1", keys[2:])  # submitted again with more: the plan grows
    assert json.loads(store.get_bytes(plan_key("mode", "run1")))["keys"] == sorted(keys)
    assert verify_run(store, "run1").ok
    os.remove(tmp_path / lost)
    path = tmp_path / keys[0]
    data = path.read_bytes()
    with open(path, "r+b") as handle:  # a byte changed in place: the checksum stays, the bytes differ
        handle.seek(10)
        handle.write(b"#")
    copy = keys[2].replace("__attempt_0", "__attempt_7")
    shutil.copy(tmp_path / keys[2], tmp_path / copy)  # the same episode under a second key, no checksum
    hand = tmp_path / keys[3]
    hand.unlink()
    hand.write_bytes(b'{"type": "step", "step_idx": 0}\n')  # written by another tool: no checksum, no start
    check = verify_run(store, "run1")
    assert check.missing == [lost] and check.unplanned == [copy]
    assert check.duplicates == [[keys[2], copy]]
    assert set(check.corrupt) == {keys[0], keys[3]} and "first record must be episode_start" in check.corrupt[keys[3]]
    assert check.unverified == 2 and not check.ok
    assert data != path.read_bytes()


def test_the_cli_exits_1_on_a_damaged_run_and_0_on_a_whole_one(tmp_path):
    store = FileStore(tmp_path)
    keys = [record_episode(store, task=f"t-{i:05d}") for i in range(2)]
    record_plan(store, "mode", "run1", keys)
    env = {"LORALOOP_STORE_URL": f"file://{tmp_path}"}
    whole = run_cli(["store", "verify", "--run", "run1"], env)
    assert whole.returncode == 0 and "2 planned, 2 stored, 0 missing, 0 duplicated, 0 corrupt" in whole.stdout
    os.remove(tmp_path / keys[1])
    damaged = run_cli(["store", "verify", "--run", "run1"], env)
    assert damaged.returncode == 1 and f"missing    {keys[1]}" in damaged.stdout
    unknown = run_cli(["store", "verify", "--run", "nope"], env)
    assert unknown.returncode == 1 and "run 'nope': no episodes or plan" in unknown.stdout + unknown.stderr
