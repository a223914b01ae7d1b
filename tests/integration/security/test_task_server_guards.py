"""The Task Server under the hostile probe, as `loraloop serve task-server` over real containers: a token guards
every route but health, and a hostile start is refused before an environment container exists."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import httpx
import pytest

from tests.helpers import free_port, wait_port

TOKEN = "task-server-token-0123456789"


@pytest.fixture(scope="module")
def guarded_server(docker_ready):
    """`loraloop serve task-server` over the shell tasks with LORALOOP_TASK_SERVER_TOKEN set (memory mode)."""
    port = free_port()
    env = {**os.environ, "LORALOOP_TASK_SERVER_TOKEN": TOKEN, "LORALOOP_BROKER_URL": ""}
    proc = subprocess.Popen(
        [sys.executable, "-m", "loraloop.cli", "serve", "task-server", "--task", "os-sec", "--port", str(port)],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    wait_port(port, 60)
    yield f"http://127.0.0.1:{port}", proc
    if proc.poll() is None:
        proc.terminate()
        proc.wait(timeout=60)


def containers_of(proc: subprocess.Popen) -> list[str]:
    """The environment containers a server process created, by the labels the shell env puts on them."""
    owner = f"{socket.gethostname()}:{proc.pid}"
    listed = subprocess.run(
        [
            "docker",
            "ps",
            "-aq",
            "--filter",
            "label=loraloop.role=shell-env",
            "--filter",
            f"label=loraloop.owner={owner}",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return listed.stdout.split()


def test_task_server_token_guards_every_route_but_health(guarded_server):
    """Finding: the Task Server had no authentication; anyone reaching the port started containers."""
    base, _ = guarded_server
    calls = [
        ("GET", "/api/task/info", None),
        ("POST", "/api/episode/start", {"sample_id": 0}),
        ("POST", "/api/episode/step", {"episode_id": "e", "action": {"content": "ls"}}),
        ("POST", "/api/episode/cancel", {"episode_id": "e"}),
    ]
    for headers in ({}, {"Authorization": "Bearer wrong-token"}):
        for method, path, body in calls:
            reply = httpx.request(method, base + path, json=body, headers=headers, timeout=60)
            assert reply.status_code == 401 and "LORALOOP_TASK_SERVER_TOKEN" in reply.json()["detail"], path
            assert TOKEN not in reply.text
    assert httpx.get(base + "/api/health", timeout=30).status_code == 200
    right = {"Authorization": f"Bearer {TOKEN}"}
    assert httpx.get(base + "/api/task/info", headers=right, timeout=30).status_code == 200
    assert (
        httpx.post(base + "/api/episode/cancel", json={"episode_id": "e"}, headers=right, timeout=30).status_code == 404
    )


def test_an_areal_style_client_with_the_token_header_plays_an_episode(guarded_server):
    """docs/security.md: AReaL's client gets the token as a custom header on its aiohttp sessions."""
    import asyncio

    from loraloop.envs.shell.teacher import ScriptedTeacher
    from loraloop.task_registry import load_registry
    from tests.integration.taskserver.areal_client import TaskServerClient

    base, _ = guarded_server
    task = next(t for t in load_registry("configs/tasks/os").tasks if t.split == "test")
    teacher = ScriptedTeacher(task)

    async def act(messages):
        return teacher.act(messages).text

    row = {"index": task.index, "messages": []}
    with pytest.raises(RuntimeError, match="HTTP 401"):
        asyncio.run(TaskServerClient([base]).run_episode(row, act))
    result = asyncio.run(TaskServerClient([base], headers={"Authorization": f"Bearer {TOKEN}"}).run_episode(row, act))
    assert result["reward"] == 1.0 and result["info"]["success"]


def test_deep_configs_get_4xx_and_leave_no_container(guarded_server):
    """Finding: a config 500 levels deep was a bare 500 after the container was made, one leaked container per request,
    never reaped by idle timeout or shutdown. Now it is refused before anything is allocated; and at shutdown the
    server removes the containers of the episodes it has open."""
    base, proc = guarded_server
    right = {"Authorization": f"Bearer {TOKEN}"}
    deep = b'{"sample_id": 0, "config": {"x": ' + b"[" * 500 + b"]" * 500 + b"}}"
    for _ in range(5):
        reply = httpx.post(
            base + "/api/episode/start", content=deep, timeout=60, headers={**right, "Content-Type": "application/json"}
        )
        assert reply.status_code == 422 and "nested more than" in reply.json()["detail"], reply.text
    assert containers_of(proc) == []
    started = httpx.post(
        base + "/api/episode/start", json={"sample_id": 0, "config": {"x": [[["fine"]]]}}, headers=right, timeout=120
    )
    assert started.status_code == 200, started.text
    assert len(containers_of(proc)) == 1
    proc.terminate()
    proc.wait(timeout=60)
    assert containers_of(proc) == []
