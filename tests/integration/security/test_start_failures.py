"""A failure at each step of an episode's start, caused for real, leaves nothing behind: the container start (an image
no engine has), the task's init (a script that exits 3), and the store (an S3 URL nothing listens on). Counted before
and after, for the Task Server and the rollout worker's episode function: this process's containers (by owner
label), the Task Server's open episodes, and the store's objects, where the one object a failed start may leave is
its own trajectory, stored as failed (env_error)."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from loraloop.rollout.episode import run_episode
from loraloop.rollout.sampler import EpisodeSpec
from loraloop.store import open_store
from loraloop.store.trajectories import parse_episode
from loraloop.task_registry import load_registry
from tests.helpers import free_port
from tests.hostile_json import my_containers, store_objects

PLAY = {"evaluation": {"match": "1", "example": "echo 1"}}
FAILING = {  # a task per step of the start, each failing there for real
    "container": {"description": "No image.", "create": {"image": "loraloop/no-such-image:never"}, **PLAY},
    "init": {"description": "Init fails.", "create": {"init": "echo half-done > /root/x; exit 3"}, **PLAY},
}
COUNTS: dict[str, tuple[int, int]] = {}  # step -> (containers before, after), printed for docs/security.md


@pytest.fixture(scope="module")
def registry(tmp_path_factory):
    """The failing tasks as one registry, task i failing at step FAILING[i]."""
    path = tmp_path_factory.mktemp("failing") / "tasks.json"
    path.write_text(json.dumps(list(FAILING.values())))
    return path


def failed_only(store, count: int) -> None:
    """The store holds `count` objects, each a whole trajectory stored as failed at start (env_error)."""
    keys = store_objects(store)
    assert len(keys) == count, keys
    for key in keys:
        assert parse_episode(key, store.get_bytes(key)).end.status == "env_error", key


@pytest.mark.parametrize("step", list(FAILING))
def test_task_server_start_failing_at_each_step_leaves_no_container(
    step, registry, settings_for, docker_ready, redis_url
):
    from loraloop.taskserver.app import create_app

    settings = settings_for(broker_url=redis_url, init_timeout_s=30, command_timeout_s=10)
    client = TestClient(create_app(load_registry(registry), f"fail-{step}", settings, run_id="fail"))
    before = my_containers()
    reply = client.post("/api/episode/start", json={"sample_id": list(FAILING).index(step)})
    after = my_containers()
    COUNTS[f"task server, {step}"] = (before, after)
    assert reply.status_code == 500 and "environment failure" in reply.json()["detail"], reply.text
    assert str(settings.store_url.removeprefix("file://")) not in reply.text
    assert after == before and client.get("/api/health").json()["active_episodes"] == 0
    failed_only(open_store(settings=settings), 1)


def scripted_spec(registry, task) -> EpisodeSpec:
    """The one episode of `task` a rollout worker plays with the scripted teacher, in run fail/fail."""
    return EpisodeSpec(
        mode="fail",
        run_id="fail",
        task_registry=str(registry),
        task_id=task.index,
        task_index=0,
        attempt=0,
        seed=1,
        task_seed=1,
        temperature=0.0,
        policy="scripted",
        model=None,
        max_steps=3,
    )


@pytest.mark.parametrize("step", list(FAILING))
def test_rollout_worker_episode_failing_at_each_step_leaves_no_container(step, registry, settings_for, docker_ready):
    settings = settings_for(init_timeout_s=30, command_timeout_s=10)
    task = load_registry(registry).tasks[list(FAILING).index(step)]
    spec = scripted_spec(registry, task)
    before = my_containers()
    summary = run_episode(spec, settings)
    after = my_containers()
    COUNTS[f"worker, {step}"] = (before, after)
    assert summary.status == "env_error" and after == before, summary
    failed_only(open_store(settings=settings), 1)


def test_rollout_worker_with_the_store_unreachable_starts_no_container(registry, settings_for, docker_ready):
    """The store at an S3 URL nothing listens on (store_retry_s 0: no waiting it out): the episode fails before its
    container is made."""
    from loraloop.errors import ServiceUnavailable

    settings = settings_for(
        store_url="s3://gone",
        s3_endpoint_url=f"http://127.0.0.1:{free_port()}",
        s3_access_key="x",
        s3_secret_key="x",
        store_retry_s=0,
    )
    task = load_registry(registry).tasks[0]
    spec = scripted_spec(registry, task)
    before = my_containers()
    with pytest.raises(ServiceUnavailable, match="unreachable"):
        run_episode(spec, settings)
    COUNTS["worker, store"] = (before, my_containers())
    assert my_containers() == before
    print("containers of this process before and after each failed start:", COUNTS)
