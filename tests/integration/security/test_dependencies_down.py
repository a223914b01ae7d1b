"""Redis down (a real Redis port with nothing listening): the Task Server and the gateway answer 503 naming the
dependency, with Retry-After, as the rollout API does for its broker, never a bare 500."""

from __future__ import annotations

from fastapi.testclient import TestClient

from loraloop.serve.gateway.app import create_app as gateway_app
from loraloop.task_registry import load_registry
from loraloop.taskserver.app import create_app as task_server_app
from tests.helpers import free_port

MOCK = "configs/tasks/tau2/mock_base.json"
ADMIN = "test-admin-key-0123456789"


def down(reply) -> None:
    """A 503 that names Redis, says when to try again and shows no credentials."""
    assert reply.status_code == 503, reply.text
    assert reply.headers["Retry-After"] == "5" and "Redis" in reply.json()["detail"]
    assert "secret-password" not in reply.text


def test_task_server_with_redis_down_answers_503_with_retry_after(settings_for):
    broker = f"redis://:secret-password@127.0.0.1:{free_port()}/0"
    client = TestClient(task_server_app(load_registry(MOCK), "tau2-mock", settings_for(broker_url=broker)))
    down(client.post("/api/episode/start", json={"sample_id": 0}))
    down(client.post("/api/episode/step", json={"episode_id": "e", "action": {"content": "x"}}))
    down(client.get("/api/health"))


def test_gateway_with_redis_down_answers_503_with_retry_after(settings_for):
    broker = f"redis://:secret-password@127.0.0.1:{free_port()}/0"
    client = TestClient(gateway_app(settings_for(gateway_admin_key=ADMIN, broker_url=broker)))
    down(client.post("/rl/start_session", json={"task_id": "t1"}, headers={"Authorization": f"Bearer {ADMIN}"}))
    down(client.post("/rl/end_session", json={}, headers={"Authorization": "Bearer sk-sess-unknown-key-0123"}))
