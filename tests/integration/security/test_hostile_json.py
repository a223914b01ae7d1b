"""Hostile JSON (tests/hostile_json.py) against the four apps that take a client's input: the rollout jobs API, its
viewer (the sites take forms, never JSON, so the viewer is the fourth), the Task Server over real containers and the
gateway, each on a real Redis and a file store. For every example: no 5xx, no token or host path in the answer, and
nothing left behind: this process's containers (by owner label), the open episodes or sessions and the store's
objects are what the accepted calls explain, checked after each example."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote_from_bytes

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from loraloop.paths import project_root
from loraloop.store import open_store
from tests.helpers import ROOT, record_episode
from tests.hostile_json import assert_sound, hostile_bodies, my_containers, store_objects

TOKEN = "hostile-json-token-0123456789"
ADMIN = "hostile-json-admin-0123456789"
URL_BYTES = 8192  # a URL's share of a hostile text: what servers and proxies take in a request line
EXAMPLES = {"jobs_api": 40, "viewer": 40, "task_server": 30, "gateway": 40}


@dataclass
class Route:
    """One route a hostile body is sent to: its method and path, and the bodies drawn for it."""

    method: str
    path: str
    bodies: st.SearchStrategy[bytes]


@dataclass
class Target:
    """An app under hostile JSON: how to send a body, what to do after an answer (release what an accepted call
    allocated, counting the store objects that legitimately stay), and what it holds now."""

    client: TestClient
    routes: list[Route]
    secrets: list[str]
    send: Callable[[Route, bytes], Any]
    after: Callable[[Route, Any], None]
    holds: Callable[[], dict[str, Any]]
    allowed_5xx: tuple[str, ...] = ()
    shown_when_ok: tuple[str, ...] = ()
    kept: list[str] = field(default_factory=list)  # store objects accepted calls were meant to write


def host_paths(store_root) -> list[str]:
    """The host folders no answer may name: the checkouts and the test's store."""
    return [str(ROOT), str(project_root()), str(store_root)]


def json_post(client: TestClient, headers: dict[str, str]) -> Callable[[Route, bytes], Any]:
    """Send a hostile body as the JSON of a POST."""
    return lambda route, body: client.request(
        route.method, route.path, content=body, headers={**headers, "Content-Type": "application/json"}
    )


@pytest.fixture
def jobs_api(settings_for, redis_url, tmp_path):
    """The rollout API with a token, on the test Redis (its own database) and a file store."""
    from loraloop.service.api.main import create_app

    settings = settings_for(broker_url=redis_url.rsplit("/", 1)[0] + "/5", api_token=TOKEN)
    client = TestClient(create_app(settings))
    store = open_store(settings=settings)
    target = Target(
        client,
        [
            Route(
                "POST",
                "/api/jobs",
                hostile_bodies(
                    {
                        "experiment": "teacher",
                        "run_id": "hostile",
                        "task_registry": "configs/tasks/os",
                        "subset": "test",
                        "sample_size": 1,
                        "seed": 3,
                        "temperature": 0.5,
                    }
                ),
            )
        ],
        [TOKEN, *host_paths(tmp_path / "store")],
        json_post(client, {"Authorization": f"Bearer {TOKEN}"}),
        lambda route, reply: None,
        lambda: {},
    )

    def after(_route, reply):
        if reply.status_code == 201:  # a job was booked: its plan is the one object it writes
            run_id = reply.json()["run_id"]
            target.kept += [key for key in store_objects(store) if f"/{run_id}" in key]
            assert (
                client.post(f"/api/jobs/{run_id}/cancel", headers={"Authorization": f"Bearer {TOKEN}"}).status_code
                == 200
            )

    target.after = after
    target.shown_when_ok = (store.url,)  # a job's status says where its episodes go (JobStatus.store_url)
    target.holds = lambda: {
        "containers": my_containers(),
        "objects": sorted(set(store_objects(store)) - set(target.kept)),
    }
    return target


@pytest.fixture
def viewer(settings_for, redis_url, tmp_path):
    """The viewer of the rollout API, logged in with its token, over a store holding one episode: hostile JSON
    text as its query values, path parts and login form."""
    from loraloop.service.api.main import create_app

    settings = settings_for(broker_url=redis_url, api_token=TOKEN)
    store = open_store(settings=settings)
    record_episode(store)
    client = TestClient(create_app(settings))
    assert client.post("/ui/login", data={"token": TOKEN, "next": "/ui"}, follow_redirects=False).status_code == 303
    assert client.get("/ui/runs/mode/run1").status_code == 200  # the run's index, which the viewer writes once
    texts = hostile_bodies({"key": "trajectories/mode/run1/t-00001__attempt_0.jsonl"})
    routes = [
        Route("GET", path, texts)
        for path in (
            "/ui?mode=",
            "/ui/episode?key=",
            "/ui/file?key=",
            "/ui/compare?key=trajectories/x.jsonl&key=",
            "/ui/runs/mode/run1?task=",
            "/ui/runs/",
            "/ui/login?next=",
        )
    ]
    routes.append(Route("POST", "/ui/login", texts))

    def send(route, body):
        body = body[:URL_BYTES]
        if route.method == "POST":  # the form's fields, as a browser encodes them
            return client.post(
                route.path,
                content=b"token=" + quote_from_bytes(body).encode() + b"&next=%2Fui",
                headers={"Content-Type": "application/x-www-form-urlencoded"},
                follow_redirects=False,
            )
        return client.get(route.path + quote_from_bytes(body, safe=""), follow_redirects=False)

    objects = store_objects(store)
    return Target(
        client,
        routes,
        [TOKEN, *host_paths(tmp_path / "store")],
        send,
        lambda route, reply: None,
        lambda: {"containers": my_containers(), "objects": store_objects(store) == objects},
        shown_when_ok=(store.url,),
    )  # the run list names the store it shows


@pytest.fixture
def task_server(settings_for, docker_ready, redis_url, tmp_path):
    """The Task Server with a token over a one-task shell registry (real containers), its episodes in Redis. One
    episode stays open for the step and cancel routes (their bodies name it); when a call ends it, another starts."""
    from loraloop.task_registry import load_registry
    from loraloop.taskserver.app import create_app

    (tmp_path / "tasks.json").write_text(
        json.dumps([{"description": "Print 1.", "evaluation": {"match": "1", "example": "echo 1"}}])
    )
    settings = settings_for(task_server_token=TOKEN, broker_url=redis_url, command_timeout_s=10)
    store = open_store(settings=settings)
    client = TestClient(
        create_app(
            load_registry(tmp_path / "tasks.json"), f"hostile-{uuid.uuid4().hex[:6]}", settings, run_id="hostile"
        )
    )
    auth = {"Authorization": f"Bearer {TOKEN}"}
    post = json_post(client, auth)
    standing = {"id": "", "ended": 0}

    def open_one() -> None:
        reply = client.post("/api/episode/start", json={"sample_id": 0}, headers=auth)
        assert reply.status_code == 200, reply.text
        standing["id"] = reply.json()["episode_id"]

    routes = [
        Route("POST", "/api/episode/start", hostile_bodies({"sample_id": 0, "config": {"protocol": "text"}})),
        Route(
            "POST",
            "/api/episode/step",
            hostile_bodies(
                {"episode_id": "STANDING", "action": {"type": "text", "content": "Act: bash\n```bash\nls\n```"}}
            ),
        ),
        Route("POST", "/api/episode/cancel", hostile_bodies({"episode_id": "STANDING"})),
    ]

    def send(route, body):
        return post(route, body.replace(b"STANDING", standing["id"].encode()))

    def after(route, reply):
        if reply.status_code != 200:
            return
        if route.path.endswith("/start"):  # a hostile start that was valid all the same: its episode is cancelled
            cancelled = client.post(
                "/api/episode/cancel", json={"episode_id": reply.json()["episode_id"]}, headers=auth
            )
            assert cancelled.status_code == 200, cancelled.text
            standing["ended"] += 1
        elif route.path.endswith("/cancel") or reply.json()["done"]:
            standing["ended"] += 1
            open_one()

    def holds():
        active = client.get("/api/health").json()["active_episodes"]
        stored = [key for key in store_objects(store)]
        return {"containers": my_containers(), "open episodes": active, "stored": len(stored) - standing["ended"]}

    open_one()
    yield Target(client, routes, [TOKEN, *host_paths(tmp_path / "store")], send, after, holds)
    client.post("/api/episode/cancel", json={"episode_id": standing["id"]}, headers=auth)


@pytest.fixture
def gateway(settings_for, redis_url, tmp_path):
    """The gateway with its sessions in Redis and its upstream vLLM down (a loopback port nothing listens on): a chat
    body it accepts reaches the upstream and is answered 502 naming vLLM, which the checks allow. One session stays
    open for the session routes; when a call ends it, another starts."""
    from loraloop.serve.gateway.app import create_app
    from tests.helpers import free_port

    settings = settings_for(
        gateway_admin_key=ADMIN,
        broker_url=redis_url,
        gateway_experiment="hostile",
        vllm_url=f"http://127.0.0.1:{free_port()}/v1",
    )
    store = open_store(settings=settings)
    client = TestClient(create_app(settings))
    admin = {"Authorization": f"Bearer {ADMIN}"}
    standing = {"key": "", "ended": 0, "sessions": 0}

    def open_one() -> None:
        reply = client.post("/rl/start_session", json={"task_id": "standing"}, headers=admin)
        assert reply.status_code == 200, reply.text
        standing["key"] = reply.json()["api_key"]

    open_one()
    standing["sessions"] = client.get("/health").json()["open_sessions"]
    routes = [
        Route("POST", "/rl/start_session", hostile_bodies({"task_id": "t1", "experiment": "hostile", "run_id": "r1"})),
        Route("POST", "/rl/set_reward", hostile_bodies({"reward": 0.5, "interaction_id": None})),
        Route("POST", "/rl/end_session", hostile_bodies({})),
        Route(
            "POST",
            "/v1/chat/completions",
            hostile_bodies({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}),
        ),
    ]

    def send(route, body):
        who = ADMIN if route.path == "/rl/start_session" else standing["key"]
        return json_post(client, {"Authorization": f"Bearer {who}"})(route, body)

    def after(route, reply):
        if reply.status_code != 200:
            return
        if route.path == "/rl/start_session":  # a hostile start that was valid all the same: stored at once
            ended = client.post(
                "/rl/end_session", json={}, headers={"Authorization": f"Bearer {reply.json()['api_key']}"}
            )
            assert ended.status_code == 200, ended.text
            standing["ended"] += 1
        elif route.path == "/rl/end_session":
            standing["ended"] += 1
            open_one()

    def holds():
        return {
            "containers": my_containers(),
            "open sessions": client.get("/health").json()["open_sessions"],
            "stored": len(store_objects(store)) - standing["ended"],
        }

    return Target(
        client,
        routes,
        [ADMIN, *host_paths(tmp_path / "store")],
        send,
        after,
        holds,
        allowed_5xx=("vLLM unreachable at",),
    )


@pytest.mark.parametrize("app", list(EXAMPLES))
def test_hostile_json_gets_no_5xx_and_leaves_nothing_behind(app, request):
    """Every hostile body: an answer under 500 with no secret or host path, and after it this process holds no
    more containers, open episodes or sessions, or store objects than the accepted calls explain."""
    target: Target = request.getfixturevalue(app)
    before = target.holds()
    codes: Counter = Counter()
    started = time.monotonic()

    @hypothesis_settings(
        max_examples=EXAMPLES[app], deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(data=st.data())
    def one(data):
        route = data.draw(st.sampled_from(target.routes), label="route")
        body = data.draw(route.bodies, label="body")
        reply = target.send(route, body)
        codes[f"{route.path.split('?')[0]} {reply.status_code}"] += 1
        assert_sound(reply, target.secrets, route.path, body, target.allowed_5xx, target.shown_when_ok)
        target.after(route, reply)
        assert target.holds() == before, (route.path, reply.status_code, reply.text[:300], body[:200], dict(codes))

    one()
    print(
        f"{app}: {sum(codes.values())} hostile bodies in {time.monotonic() - started:.1f} s, by route and "
        f"status: {dict(codes)}"
    )
    assert sum(codes.values()) >= EXAMPLES[app]
