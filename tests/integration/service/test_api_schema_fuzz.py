"""Schemathesis over the rollout API's own OpenAPI schema, on a real Redis: whatever a client sends within or
around the schema, the answer is never a 5xx."""

from loraloop.service.api.main import create_app
from loraloop.settings import Settings
from tests.helpers import fuzz_api


def test_the_rollout_api_never_answers_5xx(redis_url, tmp_path):
    app = create_app(Settings(broker_url=redis_url.rsplit("/", 1)[0] + "/7", store_url=f"file://{tmp_path}"))
    codes = fuzz_api(app, examples=50)
    print("rollout API, calls by status:", codes)
    assert sum(codes.values()) >= 300 and any(400 <= code < 500 for code in codes)
