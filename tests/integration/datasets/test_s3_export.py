"""Export reads its episodes from a real S3 server (SeaweedFS)."""

from loraloop.datasets.export import export
from loraloop.settings import Settings
from loraloop.store import open_store
from tests.helpers import LS, store_episode


def test_export_reads_an_s3_store(s3_endpoint, tmp_path):
    settings = Settings(s3_endpoint_url=s3_endpoint, s3_access_key="any", s3_secret_key="any")
    s3 = open_store("s3://loraloop-export/p", settings)
    store_episode(s3, "t9", 0, 1.0, [("Task: t9", LS, None), ("The output of the OS:\n\na", "Act: answer(a)", None)])
    manifest = export(s3, "trajectories", tmp_path / "ds", ["bc", "grpo"])
    assert manifest["rows"] == {"bc": 2, "grpo": 2} and manifest["source"].startswith("s3://loraloop-export/p/")
