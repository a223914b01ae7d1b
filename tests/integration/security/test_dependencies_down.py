"""A dependency down answers 503 naming it, with Retry-After, as the rollout API does for its broker, never a bare 500
and never a credential or a host path: Redis down (a real Redis port with nothing listening) for the Task Server and
the gateway; the gateway's and the Task Server's S3 store (a real SeaweedFS server) stopped mid-session, as an episode
ends and at a start, then started again, losing nothing."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from fastapi.testclient import TestClient

from loraloop.serve.gateway.app import create_app as gateway_app
from loraloop.serve.gateway.recording import Completion
from loraloop.serve.gateway.sessions import Sessions
from loraloop.store import open_store
from loraloop.store.trajectories import parse_episode
from loraloop.task_registry import load_registry
from loraloop.taskserver.app import create_app as task_server_app
from tests.helpers import ROOT, free_port
from tests.hostile_json import my_containers, store_objects

MOCK = "configs/tasks/tau2/mock_base.json"
ADMIN = "test-admin-key-0123456789"
S3_KEYS = {"s3_access_key": "store-access-key-0123", "s3_secret_key": "store-secret-key-0123"}


def down(reply, dependency: str = "Redis", secrets: tuple[str, ...] = ("secret-password",)) -> None:
    """A 503 that names the dependency, says when to try again and shows none of `secrets`."""
    assert reply.status_code == 503, reply.text
    assert reply.headers["Retry-After"] == "5" and dependency in reply.json()["detail"], reply.text
    assert not any(secret in reply.text for secret in secrets), reply.text


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


def test_rollout_api_and_viewer_with_the_store_unreachable_answer_503_naming_it(settings_for, redis_url):
    """The store at an S3 port nothing listens on (store_retry_s 0): booking a job (its plan is written there) and the
    viewer's run list answer 503 naming the bucket and endpoint, never the keys."""
    from loraloop.service.api.main import create_app

    endpoint = f"http://127.0.0.1:{free_port()}"
    client = TestClient(
        create_app(
            settings_for(
                broker_url=redis_url, store_url="s3://jobs", s3_endpoint_url=endpoint, store_retry_s=0, **S3_KEYS
            )
        )
    )
    for reply in (client.post("/api/jobs", json={"experiment": "teacher", "run_id": "down"}), client.get("/ui")):
        down(reply, f"the store unreachable at s3://jobs on {endpoint}", tuple(S3_KEYS.values()))


class GatewayOnS3:
    """The gateway (its sessions in Redis, vLLM down) over an S3 store on a SeaweedFS server the test stops and
    starts; the store's writes are not waited out (store_retry_s 0), so an outage is answered at once."""

    def __init__(self, settings_for, redis_url: str, s3_server, tmp_path) -> None:
        self.settings = settings_for(
            store_url="s3://gateway/sessions",
            s3_endpoint_url=s3_server.endpoint,
            store_retry_s=0,
            **S3_KEYS,
            broker_url=redis_url.rsplit("/", 1)[0] + "/6",
            gateway_admin_key=ADMIN,
            vllm_url=f"http://127.0.0.1:{free_port()}/v1",
        )
        self.client = TestClient(gateway_app(self.settings))
        self.store = open_store(settings=self.settings)
        self.secrets = (*S3_KEYS.values(), ADMIN, str(ROOT), str(tmp_path))

    def start(self, task_id: str, **extra):
        """POST /rl/start_session with the admin key."""
        return self.client.post(
            "/rl/start_session",
            json={"task_id": task_id, "run_id": "outage", **extra},
            headers={"Authorization": f"Bearer {ADMIN}"},
        )

    def call(self, path: str, key: str, body: dict):
        """POST a session route with the session's key."""
        return self.client.post(path, json=body, headers={"Authorization": f"Bearer {key}"})

    def open_sessions(self) -> int:
        """The open sessions /health counts (Redis: it answers while the store is down)."""
        reply = self.client.get("/health")
        assert reply.status_code == 200, reply.text
        return reply.json()["open_sessions"]

    def store_down(self, reply) -> None:
        """A 503 naming the store (bucket and endpoint), with Retry-After, no key, credential or host path."""
        down(
            reply,
            "the store (the sessions' episodes) unreachable at s3://gateway/sessions on "
            f"{self.settings.s3_endpoint_url}",
            self.secrets,
        )


@pytest.fixture
def gateway_on_s3(settings_for, redis_url, s3_server, tmp_path):
    """A GatewayOnS3 over this test's SeaweedFS server and the test Redis (database 6)."""
    return GatewayOnS3(settings_for, redis_url, s3_server, tmp_path)


def test_gateway_with_its_store_stopped_mid_session_answers_503_and_loses_nothing(gateway_on_s3, s3_server):
    """The S3 server stops with a session open: the routes that write the store (end_session, a start that refreshes
    the session) answer 503 naming it, never 500; the routes that need only Redis go on (set_reward, health), and
    chat is answered as without the store (here its vLLM is down too: the 502 naming vLLM). The session stays open;
    once the server is back, ending it stores its episode exactly once, with the reward given during the outage.

    The session's one completion is recorded by a second Sessions over the same Redis (a replica, as the chat route
    records it), because this test runs no vLLM; every call under test goes through the gateway's HTTP routes."""
    gateway = gateway_on_s3
    started = gateway.start("outage")
    assert started.status_code == 200, started.text
    key, episode_key = started.json()["api_key"], started.json()["episode_key"]
    Sessions(gateway.settings, gateway.store).record(
        key,
        Completion(
            id="chatcmpl-1",
            model="m",
            content="ls",
            prompt_token_ids=[1, 2],
            completion_token_ids=[3],
            logprobs=[-0.5],
            finish_reason="stop",
        ),
        [{"role": "user", "content": "go"}],
        {},
        None,
        5.0,
    )
    s3_server.stop()

    rewarded = gateway.call("/rl/set_reward", key, {"reward": 0.5})
    assert rewarded.status_code == 200 and rewarded.json()["interaction_id"] == "chatcmpl-1", rewarded.text
    chat = gateway.call("/v1/chat/completions", key, {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert chat.status_code == 502 and "vLLM unreachable" in chat.text, chat.text
    gateway.store_down(gateway.call("/rl/end_session", key, {}))
    gateway.store_down(gateway.start("outage", api_key=key))  # a refresh stores the old session first
    assert gateway.open_sessions() == 1  # the session is still open, its reward kept

    s3_server.start()
    ended = gateway.call("/rl/end_session", key, {})
    assert ended.status_code == 200 and ended.json()["stored"] and ended.json()["episode_key"] == episode_key, (
        ended.text
    )
    assert gateway.call("/rl/end_session", key, {}).status_code == 409  # ended once
    assert store_objects(gateway.store) == [episode_key]  # stored exactly once, nothing else written
    episode = parse_episode(episode_key, gateway.store.get_bytes(episode_key))
    assert (episode.end.status, episode.end.reward, [s.reward for s in episode.steps]) == ("completed", 0.5, [0.5])
    assert gateway.open_sessions() == 0


def test_gateway_session_start_with_the_store_down_leaves_no_session_and_no_object(gateway_on_s3, s3_server):
    """A start fails at the store (the S3 server stopped: its attempt index is looked up there) after the attempt
    counter moved: 503 naming the store, and no session opened nor object written, counted before and after."""
    gateway = gateway_on_s3
    before = (gateway.open_sessions(), store_objects(gateway.store))
    s3_server.stop()
    gateway.store_down(gateway.start("fails-at-start"))
    assert gateway.open_sessions() == before[0]
    s3_server.start()
    after = (gateway.open_sessions(), store_objects(gateway.store))
    print(f"gateway start with the store down: (open sessions, store objects) before {before}, after {after}")
    assert after == before == (0, [])


class TaskServerOnS3:
    """The Task Server (its episodes in Redis, shell episodes in real containers) over an S3 store on a SeaweedFS
    server the test stops and starts; one task, answered `1`; the store's calls are not waited out (store_retry_s 0)."""

    def __init__(self, settings_for, redis_url: str, s3_server, tmp_path, idle_timeout_s: float = 300.0) -> None:
        tasks = tmp_path / "tasks.json"
        tasks.write_text(json.dumps([{"description": "Answer 1.", "evaluation": {"match": "1", "example": "echo 1"}}]))
        self.settings = settings_for(
            store_url="s3://taskserver/episodes",
            s3_endpoint_url=s3_server.endpoint,
            store_retry_s=0,
            **S3_KEYS,
            broker_url=redis_url.rsplit("/", 1)[0] + "/7",
            init_timeout_s=30,
            command_timeout_s=10,
        )
        self.app = task_server_app(
            load_registry(tasks),
            f"outage-{uuid.uuid4().hex[:8]}",
            self.settings,
            idle_timeout_s=idle_timeout_s,
            run_id="outage",
        )
        self.client = TestClient(self.app)
        self.store = open_store(settings=self.settings)
        self.secrets = (*S3_KEYS.values(), str(ROOT), str(tmp_path))

    def call(self, path: str, body: dict):
        """POST a Task Server route."""
        return self.client.post(path, json=body)

    def open_episodes(self) -> int:
        """The open episodes /api/health counts (Redis: it answers while the store is down)."""
        reply = self.client.get("/api/health")
        assert reply.status_code == 200, reply.text
        return reply.json()["active_episodes"]

    def live(self) -> tuple[int, int]:
        """This process's containers (by owner label) and the open episodes: what can be counted with the store down."""
        return my_containers(), self.open_episodes()

    def counts(self) -> tuple[int, int, list[str]]:
        """`live` and the store's objects."""
        return *self.live(), store_objects(self.store)

    def store_down(self, reply) -> None:
        """A 503 naming the store (bucket and endpoint), with Retry-After, no credential or host path."""
        down(
            reply,
            "the store (the episodes' trajectories) unreachable at s3://taskserver/episodes on "
            f"{self.settings.s3_endpoint_url}",
            self.secrets,
        )

    def stored(self, status: str) -> None:
        """The store holds exactly one object: the episode, ended as `status`."""
        keys = store_objects(self.store)
        assert len(keys) == 1 and keys[0].startswith("trajectories/outage-"), keys
        assert parse_episode(keys[0], self.store.get_bytes(keys[0])).end.status == status


def test_task_server_with_its_store_stopped_as_an_episode_ends_answers_503_and_loses_nothing(
    settings_for, redis_url, s3_server, docker_ready, tmp_path
):
    """The S3 server stops with an episode open: the step that ends it, and a cancel, answer 503 naming the store; the
    episode stays open, its container kept. Once the server is back, the same step sent again stores the episode
    exactly once, as it ended (completed, reward 1, one step: the answer is not played twice), and its container goes.
    A start with the store down is a 503 too, and leaves no container and no episode."""
    server = TaskServerOnS3(settings_for, redis_url, s3_server, tmp_path)
    before = server.counts()
    started = server.call("/api/episode/start", {"sample_id": 0})
    assert started.status_code == 200, started.text
    episode = started.json()["episode_id"]
    answer = {"episode_id": episode, "action": {"content": "Act: answer(1)"}}
    s3_server.stop()

    server.store_down(server.call("/api/episode/step", answer))
    server.store_down(server.call("/api/episode/cancel", {"episode_id": episode}))
    during = server.live()
    server.store_down(server.call("/api/episode/start", {"sample_id": 0}))
    assert server.live() == during == (before[0] + 1, 1)  # open, its container kept; the start left nothing

    s3_server.start()
    ended = server.call("/api/episode/step", answer)
    assert ended.status_code == 200, ended.text
    assert (ended.json()["done"], ended.json()["reward"], ended.json()["info"]["status"]) == (True, 1.0, "completed")
    assert server.call("/api/episode/step", answer).status_code == 400  # ended once
    after = server.counts()
    print(
        f"task server, store down as an episode ends: (containers, open episodes, objects) before {before}, "
        f"during {during}, after {after}"
    )
    assert after[:2] == before[:2] == (before[0], 0)
    server.stored("completed")
    key = after[2][0]
    episode_stored = parse_episode(key, server.store.get_bytes(key))
    assert (episode_stored.end.reward, len(episode_stored.steps)) == (1.0, 1)


def test_task_server_idle_reaper_keeps_an_episode_the_store_cannot_take_and_stores_it_later(
    settings_for, redis_url, s3_server, docker_ready, tmp_path
):
    """The idle reaper (timeout 2 s, a sweep each second) finds an idle episode while the S3 server is stopped: it
    keeps it open with its container; once the server is back a later sweep stores it once, as expired, and removes
    its container."""
    server = TaskServerOnS3(settings_for, redis_url, s3_server, tmp_path, idle_timeout_s=2.0)
    with server.client:  # the lifespan runs the reaper
        before = server.counts()
        started = server.call("/api/episode/start", {"sample_id": 0})
        assert started.status_code == 200, started.text
        s3_server.stop()
        time.sleep(5)  # idle past the timeout at least twice: the reaper tried and failed
        # A sweep's write attempt claims the episode (out of the open count) until it reopens it, a window that
        # grows under load: the episode must read as open again between sweeps (one dropped never would).
        deadline, during = time.monotonic() + 20, server.live()
        while during != (before[0] + 1, 1) and time.monotonic() < deadline:
            time.sleep(0.2)
            during = server.live()
        assert during == (before[0] + 1, 1)
        s3_server.start()
        deadline = time.monotonic() + 90  # the S3 server's restart and a sweep: seconds idle, far more under load
        while server.live() != before[:2] and time.monotonic() < deadline:  # stored, then its container removed
            time.sleep(0.5)
        after = server.counts()
    print(
        f"task server reaper, store down: (containers, open episodes, objects) before {before}, during {during}, "
        f"after {after}"
    )
    assert after[:2] == before[:2] == (before[0], 0)
    server.stored("expired")
