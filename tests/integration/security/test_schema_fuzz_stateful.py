"""Schemathesis over the Task Server and the gateway, each behind its token, on a real Redis: stateful runs that feed
one call's answer into the next (a started episode's id into its steps and cancel; a session's key into its reward
and end), and for the gateway the whole schema case by case with each route's credentials. Never a 5xx; afterwards
no container of this process and no open episode or session is left, and every episode or session ended is stored."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient

from loraloop.store import open_store
from tests.helpers import free_port, fuzz_api, fuzz_stateful
from tests.hostile_json import my_containers, store_objects

TOKEN = "schema-fuzz-token-0123456789"
ADMIN = "schema-fuzz-admin-0123456789"
START, STEP, CANCEL = "/api/episode/start", "/api/episode/step", "/api/episode/cancel"


def ref(path: str) -> str:
    """An OpenAPI link's operationRef to a POST route."""
    return "#/paths/" + path.replace("/", "~1") + "/post"


def test_the_task_server_stateful_never_answers_5xx_nor_leaks(settings_for, docker_ready, redis_url, tmp_path):
    """Scenarios of start, then steps or a cancel of the episode started: no 5xx, and no container, open episode or
    unstored episode left."""
    from loraloop.task_registry import load_registry
    from loraloop.taskserver.app import create_app

    (tmp_path / "tasks.json").write_text(
        json.dumps([{"description": "Print 1.", "evaluation": {"match": "1", "example": "echo 1"}}])
    )
    settings = settings_for(task_server_token=TOKEN, broker_url=redis_url, command_timeout_s=10)
    app = create_app(load_registry(tmp_path / "tasks.json"), "stateful", settings, run_id="stateful")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    client = TestClient(app)
    before = my_containers()
    started = []

    def remember(case, response):
        if case.path == START and response.status_code == 200:
            started.append(response.json()["episode_id"])

    links = {
        (START, "post"): {
            "Step": {
                "operationRef": ref(STEP),
                "requestBody": {
                    "episode_id": "$response.body#/episode_id",
                    "action": {"content": "Act: bash\n```bash\nls\n```"},
                },
            },
            "Answer": {
                "operationRef": ref(STEP),
                "requestBody": {"episode_id": "$response.body#/episode_id", "action": {"content": "Act: answer(1)"}},
            },
            "Cancel": {"operationRef": ref(CANCEL), "requestBody": {"episode_id": "$response.body#/episode_id"}},
        }
    }

    def prepare(case):
        case.headers = {**(case.headers or {}), **auth}
        if case.path == START and isinstance(case.body, dict) and isinstance(case.body.get("sample_id"), int):
            case.body["sample_id"] = int(case.body["sample_id"] % 3 == 0)  # the one sample (2 in 3), or one past it

    codes = fuzz_stateful(app, links, steps=3, scenarios=15, prepare=prepare, after=remember)
    for episode_id in started:  # those a scenario left open
        client.post(CANCEL, json={"episode_id": episode_id}, headers=auth)
    print("Task Server, stateful calls by operation and status:", codes, "episodes started:", len(started))
    linked = sum(n for call, n in codes.items() if call.startswith(f"POST {STEP} 200"))
    assert started and linked, codes  # scenarios did reach an episode's steps
    assert my_containers() == before and client.get("/api/health").json()["active_episodes"] == 0
    assert len(store_objects(open_store(settings=settings))) == len(started)  # each episode stored once


def gateway_app(settings_for, redis_url, database: int):
    """The gateway over a database of its own in the test Redis (its open sessions are its own), a file store and an
    upstream vLLM that is down (nothing listens)."""
    from loraloop.serve.gateway.app import create_app

    settings = settings_for(
        gateway_admin_key=ADMIN,
        broker_url=f"{redis_url.rsplit('/', 1)[0]}/{database}",
        gateway_experiment="schema",
        vllm_url=f"http://127.0.0.1:{free_port()}/v1",
    )
    return create_app(settings), open_store(settings=settings)


def test_the_gateway_with_each_routes_credentials_never_answers_5xx(settings_for, redis_url):
    """Case by case, each route with its credentials (the admin key, else a session's): a session a generated start
    opens is ended at once, and every session ends stored."""
    app, store = gateway_app(settings_for, redis_url, 8)
    client = TestClient(app)
    key = client.post("/rl/start_session", json={"task_id": "t"}, headers={"Authorization": f"Bearer {ADMIN}"}).json()[
        "api_key"
    ]
    started = [key]

    def credentials(case):
        admin = case.path in ("/rl/start_session", "/v1/models", "/models")
        return {"Authorization": f"Bearer {ADMIN if admin else key}"}

    def end_started(case, response):
        if case.path == "/rl/start_session" and response.status_code == 200:
            started.append(response.json()["api_key"])
            assert client.post(
                "/rl/end_session", json={}, headers={"Authorization": f"Bearer {started[-1]}"}
            ).status_code in (200, 409)  # 409: a generated api_key was the standing one's

    codes = fuzz_api(
        app,
        examples=20,
        headers=credentials,
        after=end_started,
        allowed_5xx=("vLLM unreachable at",),
        seeds={"/rl/set_reward": [{"reward": 1.0}], "/rl/start_session": [{"task_id": "seeded"}]},
    )
    client.post("/rl/end_session", json={}, headers={"Authorization": f"Bearer {key}"})
    print("gateway, calls by status:", codes, "sessions started:", len(started))
    assert sum(codes.values()) >= 100 and any(400 <= code < 500 for code in codes) and len(started) > 1
    assert client.get("/health").json()["open_sessions"] == 0
    assert len(store_objects(store)) == len(started)  # each session stored once


def test_the_gateway_stateful_never_answers_5xx_nor_leaves_a_session(settings_for, redis_url):
    """Scenarios of start_session, then a reward or the end of that session (its key from the start's answer): no
    5xx, and every session ends stored."""
    app, store = gateway_app(settings_for, redis_url, 9)
    client = TestClient(app)
    keys = []

    def prepare(case):
        if case.path == "/rl/start_session" and isinstance(case.body, dict):
            case.body.pop("api_key", None)  # a refresh of an earlier scenario's session would answer differently
        if "Authorization" not in (case.headers or {}):  # else a link's: the key of the session the scenario started
            who = ADMIN if case.path == "/rl/start_session" else (keys or ["none"])[-1]
            case.headers = {**(case.headers or {}), "Authorization": f"Bearer {who}"}

    def remember(case, response):
        if case.path == "/rl/start_session" and response.status_code == 200:
            keys.append(response.json()["api_key"])

    session = "Bearer {$response.body#/api_key}"
    links = {
        ("/rl/start_session", "post"): {
            "Reward": {
                "operationRef": ref("/rl/set_reward"),
                "parameters": {"header.Authorization": session},
                "requestBody": {"reward": 0.5},
            },
            "End": {
                "operationRef": ref("/rl/end_session"),
                "parameters": {"header.Authorization": session},
                "requestBody": {},
            },
        }
    }
    codes = fuzz_stateful(app, links, steps=3, scenarios=20, prepare=prepare, after=remember)
    for key in keys:
        client.post("/rl/end_session", json={}, headers={"Authorization": f"Bearer {key}"})
    print("gateway, stateful calls by operation and status:", codes, "sessions started:", len(keys))
    assert keys and any(call.startswith("POST /rl/end_session 200") for call in codes), codes
    assert client.get("/health").json()["open_sessions"] == 0
    assert len(store_objects(store)) == len(keys)  # each session stored once
