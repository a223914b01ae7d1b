"""The Task Server's tau2 user simulator under the hostile probe: outbound URLs and the operator's key stay the
operator's (no Docker needed: tau2 runs in-process, the user simulators are scripted listeners on loopback)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from loraloop.task_registry import load_registry
from loraloop.taskserver.app import create_app
from tests.helpers import scripted_user

MOCK = "configs/tasks/tau2/mock_base.json"
ASK = "Hi. Please create a task called 'Important Meeting' for user_1."
OPERATOR_KEY = "operator-secret-key-0123456789"


def test_the_operators_user_llm_key_never_reaches_a_url_a_client_names(settings_for, tmp_path):
    """Finding: econfig.user_llm_base_url named by a client received `Authorization: Bearer <operator key>`."""
    keys_operator, keys_client = [], []
    with scripted_user([ASK], keys_operator) as (operator_url, _), scripted_user([ASK], keys_client) as (client_url, _):
        settings = dict(tau2_user_llm_base_url=operator_url, tau2_user_llm_api_key=OPERATOR_KEY)
        client = TestClient(create_app(load_registry(MOCK), "tau2-mock", settings_for(**settings), run_id="sec"))
        for config in (
            {"econfig": {"user_llm": "x", "user_llm_base_url": client_url}},
            {"econfig.user_llm_base_url": client_url},
        ):  # AReaL's nested and dotted forms
            refused = client.post("/api/episode/start", json={"sample_id": 0, "config": config})
            assert refused.status_code == 400, refused.text
            assert "econfig.user_llm_base_url" in refused.json()["detail"]
            assert "LORALOOP_TAU2_USER_LLM_ALLOWED_URLS" in refused.json()["detail"]
        assert keys_client == []  # nothing at all reached the client's listener
        started = client.post("/api/episode/start", json={"sample_id": 0})
        assert started.status_code == 200
        assert keys_operator == [f"Bearer {OPERATOR_KEY}"]  # the configured endpoint gets its key
        client.post("/api/episode/cancel", json={"episode_id": started.json()["episode_id"]})
        stored = [p.name.rsplit("__", 1)[1] for p in (tmp_path / "store").rglob("*.jsonl") if "/sec/" in str(p)]
        assert stored == ["attempt_0.jsonl"]  # the refused starts took no attempt index

        allowed = TestClient(
            create_app(
                load_registry(MOCK),
                "tau2-mock",
                settings_for(**settings, tau2_user_llm_allowed_urls=f"http://elsewhere.invalid/v1, {client_url}/"),
                run_id="sec2",
            )
        )
        started = allowed.post(
            "/api/episode/start",
            json={
                "sample_id": 0,
                "config": {"econfig": {"user_llm": "scripted-user", "user_llm_base_url": client_url}},
            },
        )
        assert started.status_code == 200, started.text
    assert keys_client and all(OPERATOR_KEY not in key for key in keys_client)  # an allowed URL gets no key


def test_a_start_config_econfig_of_the_wrong_shape_gets_400_naming_the_field(settings_for):
    """Finding: `econfig: []` was taken as no econfig, and a user_llm of any length and characters was sent on."""
    client = TestClient(create_app(load_registry(MOCK), "tau2-mock", settings_for(), run_id="sec"))
    for config, field in (
        ({"econfig": []}, "config.econfig"),
        ({"econfig": {"user_llm": "a" * 300}}, "econfig.user_llm"),
        ({"econfig.user_llm": "two words"}, "econfig.user_llm"),
    ):
        reply = client.post("/api/episode/start", json={"sample_id": 0, "config": config})
        assert reply.status_code == 400 and field in reply.json()["detail"], reply.text
