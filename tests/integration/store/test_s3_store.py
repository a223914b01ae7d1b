"""The trajectory store on a real S3 server (SeaweedFS): whole-episode writes, listing, put_new's If-None-Match."""

from loraloop.settings import Settings
from loraloop.store import open_store
from loraloop.store.backends import sha256
from loraloop.store.integrity import record_plan, verify_run
from loraloop.store.trajectories import iter_episodes
from tests.helpers import record_episode


def test_s3_store_on_a_real_server(s3_endpoint):
    settings = Settings(s3_endpoint_url=s3_endpoint, s3_access_key="any", s3_secret_key="any")
    store = open_store("s3://loraloop-test/prefix", settings)
    key = record_episode(store, task="t-00002", attempt=1, success=False)
    assert store.exists(key)
    assert list(store.list("trajectories/mode/")) == [key]
    [episode] = iter_episodes(store, "trajectories")
    assert not episode.success and episode.end.total_steps == 1
    before = store.get_bytes(key)
    assert store.put_new(key, b"a duplicate delivery") is False  # If-None-Match: the first copy stays
    assert store.get_bytes(key) == before and store.put_new(key + ".new", b"x") is True
    assert store.checksum(key) == sha256(before) and store.checksum(key + ".new") == sha256(b"x")


def test_verify_finds_a_damaged_object_on_s3(s3_endpoint):
    """S3 user metadata carries each object's SHA-256; an object overwritten behind the store's back (a plain PUT
    without it, as another tool would) is unverified, one whose bytes no longer match is corrupt."""
    import boto3

    settings = Settings(s3_endpoint_url=s3_endpoint, s3_access_key="any", s3_secret_key="any")
    store = open_store("s3://loraloop-verify", settings)
    keys = [record_episode(store, task=f"t-{i:05d}") for i in range(3)]
    record_plan(store, "mode", "run1", keys + ["trajectories/mode/run1/t-00009__attempt_0.jsonl"])
    client = boto3.client(
        "s3", endpoint_url=s3_endpoint, aws_access_key_id="any", aws_secret_access_key="any", region_name="us-east-1"
    )
    head = client.head_object(Bucket="loraloop-verify", Key=keys[0])
    client.put_object(
        Bucket="loraloop-verify", Key=keys[0], Body=store.get_bytes(keys[0])[:-5] + b"oops\n", Metadata=head["Metadata"]
    )
    client.put_object(Bucket="loraloop-verify", Key=keys[1], Body=store.get_bytes(keys[1]))
    check = verify_run(store, "run1")
    assert list(check.corrupt) == [keys[0]] and "bytes changed since written" in check.corrupt[keys[0]]
    assert check.unverified == 1 and check.missing == ["trajectories/mode/run1/t-00009__attempt_0.jsonl"]
    assert not check.ok
