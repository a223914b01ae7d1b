"""The Task Server over a tau2 snapshot, driven as AReaL's TaskServerWorkflow drives it (text actions, start config)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from loraloop.task_registry import load_registry
from loraloop.taskserver.app import create_app
from tests.helpers import scripted_user

MOCK = "configs/tasks/tau2/mock_base.json"
ASK = "Hi. Please create a task called 'Important Meeting' for user_1."
CREATE = '{"name": "create_task", "arguments": {"user_id": "user_1", "title": "Important Meeting"}}'


def test_the_task_server_serves_tau2_tasks_to_an_areal_style_client(settings_for):
    with scripted_user([ASK]) as (url, _):
        client = TestClient(
            create_app(load_registry(MOCK), "tau2-mock", settings_for(tau2_user_llm_allowed_urls=url), run_id="ts")
        )
        econfig = {"econfig": {"user_llm": "scripted-user", "user_llm_base_url": url}}  # AReaL's names
        start = client.post("/api/episode/start", json={"sample_id": "create_task_1", "config": econfig}).json()
        messages = start["observation"]["content"]
        assert [m["role"] for m in messages] == ["system", "user"] and messages[1]["content"] == f"user: {ASK}"
        assert "create_task" in messages[0]["content"] and "tools" not in start["info"]  # text protocol: in the prompt
        episode = start["episode_id"]
        step = client.post(
            "/api/episode/step", json={"episode_id": episode, "action": {"type": "text", "content": CREATE}}
        ).json()
        assert step["done"] is False and step["observation"]["content"].startswith("tool: ")
        end = client.post(
            "/api/episode/step", json={"episode_id": episode, "action": {"type": "text", "content": "done()"}}
        ).json()
        native = client.post("/api/episode/start", json={"sample_id": 0, "config": {"protocol": "tools", **econfig}})
    assert (end["done"], end["reward"], end["info"]["success"], end["info"]["status"]) == (True, 1.0, True, "completed")
    tools = native.json()["info"]["tools"]  # a client speaking native tool calls gets the schemas
    assert {t["function"]["name"] for t in tools} >= {"create_task", "done"}
    assert "create_task" not in native.json()["observation"]["content"][0]["content"]
