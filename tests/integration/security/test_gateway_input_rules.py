"""The recording gateway under the hostile probe: identifiers, rewards and JSON depth are refused with a 4xx naming
the field and the rule (no vLLM needed: each is refused before the gateway asks it anything), and vLLM's host paths
stay behind the gateway."""

from __future__ import annotations

from fastapi.testclient import TestClient

from loraloop.serve.gateway.app import create_app

ADMIN = "test-admin-key-0123456789"


def gateway(settings_for, redis_url) -> TestClient:
    """The gateway app with its sessions in the test Redis and its episodes in a file store."""
    return TestClient(create_app(settings_for(gateway_admin_key=ADMIN, broker_url=redis_url)))


def test_start_session_experiment_or_run_id_dot_or_dotdot_gets_422(settings_for, redis_url, tmp_path):
    """Finding: start_session with experiment or run_id "." or ".." was a 500, or stored objects no run shows."""
    client = gateway(settings_for, redis_url)
    admin = {"Authorization": f"Bearer {ADMIN}"}
    for field in ("experiment", "run_id"):
        for value in (".", "..", "a/b", "x\x00y"):
            reply = client.post("/rl/start_session", json={"task_id": "t1", field: value}, headers=admin)
            assert reply.status_code == 422, (field, value, reply.text)
            error = reply.json()["detail"][0]
            assert error["loc"] == ["body", field] and "not an identifier" in error["msg"]
    assert not (tmp_path / "store").exists() or not any((tmp_path / "store").rglob("*.jsonl"))


def test_set_reward_overflow_or_non_finite_gets_422_naming_reward(settings_for, redis_url):
    """Finding: /rl/set_reward 1.7e308 twice summed to inf, stored as a null reward."""
    client = gateway(settings_for, redis_url)
    key = client.post("/rl/start_session", json={"task_id": "t1"}, headers={"Authorization": f"Bearer {ADMIN}"}).json()[
        "api_key"
    ]
    session = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    for body in (b'{"reward": 1.7e308}', b'{"reward": -1e7}', b'{"reward": 1e999}', b'{"reward": NaN}'):
        reply = client.post("/rl/set_reward", content=body, headers=session)
        assert reply.status_code == 422, (body, reply.text)
        error = reply.json()["detail"][0]
        assert error["loc"][-1] == "reward" or "reward: " in error["msg"], reply.text  # JSON's inf and NaN: the body's


def test_a_body_1000_deep_gets_422_not_a_recursion_500(settings_for, redis_url):
    """Finding: a chat body about 1,000 levels deep was a 500 RecursionError in http_guards.unencodable."""
    client = gateway(settings_for, redis_url)
    key = client.post("/rl/start_session", json={"task_id": "t1"}, headers={"Authorization": f"Bearer {ADMIN}"}).json()[
        "api_key"
    ]
    deep = b'{"model": "m", "messages": [{"role": "user", "content": "x"}], "x": ' + b"[" * 1000 + b"]" * 1000 + b"}"
    for path, who in (("/v1/chat/completions", key), ("/rl/start_session", ADMIN)):
        reply = client.post(
            path, content=deep, headers={"Authorization": f"Bearer {who}", "Content-Type": "application/json"}
        )
        assert reply.status_code == 422 and "nested more than 32 levels" in reply.text, (path, reply.text)


def test_gateway_v1_models_does_not_pass_through_vllms_root_host_path(settings_for, redis_url, vllm_url):
    """Finding: GET /v1/models passed vLLM's `root` on, the host folder the model was loaded from."""
    client = TestClient(create_app(settings_for(gateway_admin_key=ADMIN, broker_url=redis_url, vllm_url=vllm_url)))
    reply = client.get("/v1/models", headers={"Authorization": f"Bearer {ADMIN}"})
    assert reply.status_code == 200 and reply.json()["data"], reply.text
    assert all("root" not in entry for entry in reply.json()["data"])
    assert "/volumes/" not in reply.text and "/models/" not in reply.text
