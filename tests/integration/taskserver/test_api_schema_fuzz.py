"""Schemathesis over the Task Server's own OpenAPI schema, with real containers: never a 5xx, and every
episode a generated call starts is cancelled at once (stored, container removed)."""

import json

import pytest
from fastapi.testclient import TestClient

from loraloop.settings import Settings
from loraloop.task_registry import load_registry
from loraloop.taskserver.app import create_app
from tests.helpers import fuzz_api

pytestmark = pytest.mark.usefixtures("docker_ready")


def test_the_task_server_never_answers_5xx(tmp_path):
    (tmp_path / "tasks.json").write_text(
        json.dumps([{"description": "Print 1.", "evaluation": {"match": "1", "example": "echo 1"}}])
    )
    app = create_app(load_registry(tmp_path / "tasks.json"), "fuzz", Settings(store_url=f"file://{tmp_path}/store"))
    client = TestClient(app)
    started = []

    def cancel_started(case, response):
        if case.path == "/api/episode/start" and response.status_code == 200:
            started.append(response.json()["episode_id"])
            assert client.post("/api/episode/cancel", json={"episode_id": started[-1]}).status_code == 200

    codes = fuzz_api(
        app,
        examples=40,
        after=cancel_started,
        seeds={"/api/episode/start": [{"sample_id": 0}, {"sample_id": "tasks-00000", "config": {"protocol": "tools"}}]},
    )
    print("Task Server, calls by status:", codes, "episodes started and cancelled:", len(started))
    assert client.get("/api/health").json()["active_episodes"] == 0
    assert len(started) >= 2 and len(list((tmp_path / "store").rglob("*.jsonl"))) == len(started)
