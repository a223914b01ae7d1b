"""The trajectory store on a real S3 server (SeaweedFS): whole-episode writes, listing, put_new's If-None-Match."""
from loraloop.settings import Settings
from loraloop.store import open_store
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
