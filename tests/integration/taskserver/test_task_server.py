"""Task Server API over real HTTP and real containers, driven the way AReaL's TaskServerWorkflow drives it."""

import json
import os
import subprocess
import sys
import time

import httpx
import pytest

from loraloop.envs.shell.docker import reap
from loraloop.store.records import SCHEMA_VERSION
from tests.helpers import free_port, wait_port

pytestmark = pytest.mark.usefixtures("docker_ready")


@pytest.fixture(scope="module")
def server():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "loraloop.cli", "serve", "task-server", "--task", "os-test", "--port", str(port)],
        env=os.environ.copy(),
        stderr=subprocess.PIPE,
    )
    wait_port(port, 60)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=30)


def call(base, method, path, body=None):
    """One HTTP session per call, like the reference client."""
    with httpx.Client(timeout=120) as client:
        return client.request(method, base + path, json=body)


def test_health_and_info(server):
    assert call(server, "GET", "/api/health").json() == {
        "status": "healthy",
        "active_episodes": 0,
        "task_name": "os-test",
    }
    info = call(server, "GET", "/api/task/info").json()
    from loraloop.task_registry import load_registry

    assert (
        info["num_samples"] == len(load_registry("configs/tasks/os").tasks)
        and info["observation_type"] == "text"
        and info["max_episode_length"] == 8
    )


def test_dataset_rows_like_areal(server):
    """Rows {"index", "messages": []}: start, step with the example command, answer; cancel on error."""
    from loraloop.task_registry import load_registry

    tasks = [t for t in load_registry("configs/tasks/os").tasks if t.split == "test" and t.uses_answer][:3]
    rows = [{"index": t.index, "messages": []} for t in tasks]
    rewards = []
    for row, task in zip(rows, tasks):
        start = call(server, "POST", "/api/episode/start", {"sample_id": row["index"], "config": {}}).json()
        episode = start["episode_id"]
        try:
            assert start["observation"]["type"] == "messages" and start["info"]["turn"] == 0
            assert {m["role"] for m in start["observation"]["content"]} == {"system", "user", "assistant"}
            code = task.example.source(task.scripts_dir)
            step = call(
                server,
                "POST",
                "/api/episode/step",
                {
                    "episode_id": episode,
                    "action": {"type": "text", "content": f"Think: go.\nAct: bash\n```bash\n{code}\n```"},
                },
            ).json()
            assert step["done"] is False and step["observation"]["content"].startswith("The output of the OS")
            answer = step["observation"]["content"].strip().splitlines()[-1]
            end = call(
                server,
                "POST",
                "/api/episode/step",
                {"episode_id": episode, "action": {"type": "text", "content": f"Act: answer({answer})"}},
            ).json()
            assert end["done"] and end["observation"] is None and end["info"]["status"] == "completed"
            rewards.append(end["reward"])
            again = call(server, "POST", "/api/episode/step", {"episode_id": episode, "action": {"content": "x"}})
            assert again.status_code == 400
        except Exception:
            call(server, "POST", "/api/episode/cancel", {"episode_id": episode})
            raise
    assert rewards == [1.0, 1.0, 1.0]


def test_errors(server):
    assert call(server, "POST", "/api/episode/start", {"sample_id": "nope-00000"}).status_code == 404
    assert call(server, "POST", "/api/episode/start", {"sample_id": 3.5}).status_code == 422
    assert call(server, "POST", "/api/episode/start", {"sample_id": True}).status_code == 422
    assert call(server, "POST", "/api/episode/start", {"config": {}}).status_code == 422
    assert call(server, "POST", "/api/episode/step", {"episode_id": "x", "action": {"content": "a"}}).status_code == 404
    start = call(server, "POST", "/api/episode/start", {"sample_id": 0}).json()
    cancelled = call(server, "POST", "/api/episode/cancel", {"episode_id": start["episode_id"]}).json()
    assert cancelled == {"status": "cancelled", "episode_id": start["episode_id"]}
    assert call(server, "GET", "/api/health").json()["active_episodes"] == 0
    labels = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"label=loraloop.episode={start['episode_id']}"],
        capture_output=True,
        text=True,
    ).stdout
    assert labels.strip() == ""


def test_tool_call_protocol_through_the_api(server):
    bad = call(server, "POST", "/api/episode/start", {"sample_id": 0, "config": {"protocol": "xml"}})
    assert bad.status_code == 400 and "config.protocol" in bad.json()["detail"]
    start = call(
        server, "POST", "/api/episode/start", {"sample_id": "test-files-00000", "config": {"protocol": "tools"}}
    ).json()
    assert "bash_action" in start["observation"]["content"][0]["content"]
    action = {"type": "text", "content": '{"name": "answer_action", "arguments": {"answer": "no idea"}}'}
    end = call(server, "POST", "/api/episode/step", {"episode_id": start["episode_id"], "action": action}).json()
    assert end["done"] and end["reward"] == 0.0 and end["info"]["answer"] == "no idea"


def start_replica(port, env, extra=()):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "loraloop.cli",
            "serve",
            "task-server",
            "--task",
            "os-shared",
            "--port",
            str(port),
            "--run_id",
            "shared",
            *extra,
        ],
        env={**os.environ, **env},
        stderr=subprocess.DEVNULL,
    )
    wait_port(port, 60)
    return proc


def stop(proc):
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture
def replicas(tmp_path, redis_url):
    """Two API replicas sharing Redis and a file store, like two pods behind a load balancer."""
    env = {"LORALOOP_BROKER_URL": redis_url.rsplit("/", 1)[0] + "/3", "LORALOOP_STORE_URL": f"file://{tmp_path}"}
    ports = [free_port(), free_port()]
    procs = [start_replica(port, env) for port in ports]
    handle = {
        "urls": [f"http://127.0.0.1:{p}" for p in ports],
        "ports": ports,
        "procs": procs,
        "env": env,
        "store": tmp_path,
    }
    yield handle
    for proc in handle["procs"]:
        stop(proc)
    import redis

    redis.Redis.from_url(env["LORALOOP_BROKER_URL"]).flushdb()


def bash(code):
    return f"Think: run it.\nAct: bash\n```bash\n{code}\n```"


def test_shell_state_survives_replicas_and_restart(replicas):
    a, b = replicas["urls"]
    start = call(a, "POST", "/api/episode/start", {"sample_id": "test-files-00000", "config": {}}).json()
    episode = start["episode_id"]

    def step(base, code):
        response = call(base, "POST", "/api/episode/step", {"episode_id": episode, "action": {"content": bash(code)}})
        assert response.status_code == 200, response.text
        assert response.json().get("observation"), response.text  # once under load: 200 with no observation
        return response.json()["observation"]["content"].rstrip()

    step(a, "cd /etc && export ZZ=42 && greet() { echo hi $1; }")
    assert step(b, 'echo "$ZZ $(pwd)"; greet b').endswith("42 /etc\nhi b")
    stop(replicas["procs"][0])
    reap()  # as any rollout worker on this host does on its timer: the episode's container outlives replica a
    replicas["procs"][0] = start_replica(replicas["ports"][0], replicas["env"])
    assert step(a, 'echo "$ZZ"; greet a').endswith("42\nhi a")
    assert call(b, "GET", "/api/health").json()["active_episodes"] == 1
    assert call(b, "POST", "/api/episode/cancel", {"episode_id": episode}).status_code == 200
    assert call(a, "POST", "/api/episode/step", {"episode_id": episode, "action": {"content": "x"}}).status_code == 400
    stored = list((replicas["store"] / "trajectories" / "os-shared" / "shared").glob("*.jsonl"))
    records = [json.loads(line) for line in stored[0].read_text().splitlines()]
    assert [r["type"] for r in records] == ["episode_start", "step", "step", "step", "episode_end"]
    assert records[-1]["status"] == "cancelled" and records[2]["observation"].endswith("is empty.")


def test_areal_workflow_runs_a_whole_dataset_over_two_replicas(replicas):
    """Every test task, four at a time, each call round-robined over two replicas; a replica restarts midway."""
    import asyncio

    from loraloop.envs.shell.teacher import ScriptedTeacher
    from loraloop.task_registry import load_registry
    from tests.integration.taskserver.areal_client import TaskServerClient

    tasks = {t.index: t for t in load_registry("configs/tasks/os").tasks if t.split == "test"}
    rows = [{"index": index, "messages": []} for index in tasks]

    def policy_for(row):
        teacher = ScriptedTeacher(tasks[row["index"]])

        async def act(messages):
            return teacher.act(messages).text

        return act

    async def main():
        client = TaskServerClient(replicas["urls"], timeout=120)
        first = await client.run_dataset(rows[:6], policy_for)
        stop(replicas["procs"][1])
        replicas["procs"][1] = start_replica(replicas["ports"][1], replicas["env"])
        return first + await client.run_dataset(rows[6:], policy_for)

    results = asyncio.run(main())
    assert [r["reward"] for r in results] == [1.0] * len(rows)
    assert all(r["info"]["status"] == "completed" and r["info"]["success"] for r in results)
    stored = sorted((replicas["store"] / "trajectories" / "os-shared" / "shared").glob("*.jsonl"))
    assert len(stored) == len(rows)
    ends = [json.loads(p.read_text().splitlines()[-1]) for p in stored]
    assert all(e["type"] == "episode_end" and e["success"] for e in ends)
    assert call(replicas["urls"][0], "GET", "/api/health").json()["active_episodes"] == 0


def test_idle_episodes_expire_and_are_stored(tmp_path):
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "loraloop.cli",
            "serve",
            "task-server",
            "--task",
            "os-idle",
            "--port",
            str(port),
            "--idle_timeout",
            "2",
            "--run_id",
            "idle",
        ],
        env={**os.environ, "LORALOOP_STORE_URL": f"file://{tmp_path}"},
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port, 60)
        base = f"http://127.0.0.1:{port}"
        episode = call(base, "POST", "/api/episode/start", {"sample_id": 1}).json()["episode_id"]
        deadline = time.monotonic() + 30
        while call(base, "GET", "/api/health").json()["active_episodes"] and time.monotonic() < deadline:
            time.sleep(0.5)
        assert (
            call(base, "POST", "/api/episode/step", {"episode_id": episode, "action": {"content": "x"}}).status_code
            == 400
        )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:  # the container goes right after the episode is claimed
            left = subprocess.run(
                ["docker", "ps", "-aq", "--filter", f"label=loraloop.episode={episode}"], capture_output=True, text=True
            ).stdout
            if not left.strip():
                break
            time.sleep(0.3)
        assert left.strip() == ""
        stored = list((tmp_path / "trajectories" / "os-idle" / "idle").glob("*.jsonl"))
        assert json.loads(stored[0].read_text().splitlines()[-1])["status"] == "expired"
        time.sleep(2.5)  # past the idle timeout again: the ended marker used to expire with it (then 404)
        late = call(base, "POST", "/api/episode/step", {"episode_id": episode, "action": {"content": "x"}})
        assert late.status_code == 400 and "has already ended" in late.json()["detail"]
        cancel = call(base, "POST", "/api/episode/cancel", {"episode_id": episode})
        assert cancel.status_code == 400 and "has already ended" in cancel.json()["detail"]
    finally:
        stop(proc)


def test_a_stopped_memory_mode_server_stores_its_open_episodes(tmp_path):
    """Without Redis no other process can go on with an episode: stopping the server ends and stores each open
    one as `interrupted` and removes its container (it used to leave both behind)."""
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "loraloop.cli",
            "serve",
            "task-server",
            "--task",
            "os-stop",
            "--port",
            str(port),
            "--run_id",
            "stop",
        ],
        stderr=subprocess.DEVNULL,
        env={**os.environ, "LORALOOP_STORE_URL": f"file://{tmp_path}"},
    )
    try:
        wait_port(port, 60)
        base = f"http://127.0.0.1:{port}"
        episode = call(base, "POST", "/api/episode/start", {"sample_id": "test-files-00000"}).json()["episode_id"]
        step = call(base, "POST", "/api/episode/step", {"episode_id": episode, "action": {"content": bash("ls /")}})
        assert step.json()["done"] is False
    finally:
        stop(proc)
    stored = list((tmp_path / "trajectories" / "os-stop" / "stop").glob("*.jsonl"))
    lines = [json.loads(line) for line in stored[0].read_text().splitlines()]
    assert [r["type"] for r in lines] == ["episode_start", "step", "episode_end"] and lines[-1][
        "status"
    ] == "interrupted"
    left = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label=loraloop.episode={episode}"], capture_output=True, text=True
    ).stdout
    assert left.strip() == ""


@pytest.mark.serial  # counts answers against wall time: alone, not beside the other worker's tests
def test_slow_steps_past_the_cap_get_429_and_health_stays_quick(tmp_path):
    """45 slow steps at once on one episode held every worker thread, so /api/health waited its turn (13 s for 40
    in the issue). Past LORALOOP_API_MAX_IN_FLIGHT a step is refused with 429 at once, health needs no thread."""
    from concurrent.futures import ThreadPoolExecutor

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "loraloop.cli", "serve", "task-server", "--task", "os-cap", "--port", str(port)],
        stderr=subprocess.DEVNULL,
        env={**os.environ, "LORALOOP_STORE_URL": f"file://{tmp_path}", "LORALOOP_API_MAX_IN_FLIGHT": "3"},
    )
    try:
        wait_port(port, 60)
        base = f"http://127.0.0.1:{port}"
        episode = call(base, "POST", "/api/episode/start", {"sample_id": "test-files-00000"}).json()["episode_id"]
        # long enough that all 45 arrive while the first 3 still run, on a loaded machine too
        slow = {"episode_id": episode, "action": {"content": bash("sleep 6; echo slept")}}
        with ThreadPoolExecutor(48) as pool:
            steps = [pool.submit(call, base, "POST", "/api/episode/step", slow) for _ in range(45)]
            time.sleep(1.0)
            health = []
            for _ in range(5):
                began = time.monotonic()
                assert call(base, "GET", "/api/health").status_code == 200
                health.append(time.monotonic() - began)
            codes = sorted(step.result().status_code for step in steps)
        assert codes == [200] * 3 + [429] * 42, codes
        assert max(health) < 1.0, health
        assert call(base, "POST", "/api/episode/cancel", {"episode_id": episode}).status_code == 200
    finally:
        stop(proc)


def test_web_tasks_are_served_too_and_stay_on_the_replica_that_started_them(sites_url, redis_url, settings_for):
    """The Task Server picks the env by task: a REAL task runs in Chromium, scripted steps solve it,
    and the stored episode is the same typed record a rollout writes. A web episode's browser lives in
    one process, so another replica sharing the Redis state answers 409 naming the replica."""
    from fastapi.testclient import TestClient

    from loraloop.envs.web.teacher import step_action
    from loraloop.store import open_store
    from loraloop.store.trajectories import iter_episodes
    from loraloop.task_registry import load_registry
    from loraloop.taskserver.app import create_app, open_states

    registry = load_registry("configs/tasks/web")
    task = registry.get("loraloop.shop-6")
    settings = settings_for(sites_url=sites_url, broker_url=redis_url)
    apps = [
        create_app(registry, "web-test", settings, run_id="r1", states=open_states(settings, "web-test"))
        for _ in range(2)
    ]
    with TestClient(apps[0]) as first, TestClient(apps[1]) as second:
        info = first.get("/api/task/info").json()
        assert info["env_kinds"] == ["web"] and info["max_episode_length"] == 15
        bad = first.post("/api/episode/start", json={"sample_id": task.index, "config": {"protocol": "tools"}})
        assert bad.status_code == 400 and "for web tasks" in bad.json()["detail"]
        start = first.post("/api/episode/start", json={"sample_id": task.index, "config": {}}).json()
        episode = start["episode_id"]
        [system, user] = start["observation"]["content"]
        assert system["role"] == "system" and user["content"].startswith(f"# Goal\n{task.goal}")
        page = user["content"]
        elsewhere = second.post("/api/episode/step", json={"episode_id": episode, "action": {"content": "noop()"}})
        assert elsewhere.status_code == 409 and "lives on replica" in elsewhere.json()["detail"]
        for scripted in task.solution:
            reply = first.post(
                "/api/episode/step",
                json={
                    "episode_id": episode,
                    "action": {"content": f"Action: {step_action(scripted, page, sites_url)}"},
                },
            ).json()
            if reply["done"]:
                break
            page = reply["observation"]["content"]
        assert reply["done"] and reply["reward"] == 1.0 and reply["info"]["success"] is True
        assert first.get("/api/health").json()["active_episodes"] == 0
    [episode] = iter_episodes(open_store(settings=settings), "trajectories/web-test/r1/")
    assert (
        episode.start.env == "web"
        and episode.start.prompt_style == "web"
        and episode.start.schema_version == SCHEMA_VERSION
    )
    assert episode.end.success and len(episode.steps) == len(task.solution)
    assert all(step.run_id == "r1" and step.action_source == "client" for step in episode.steps)
    # each step ran in a session rebuilt from the saved records: the progress carried over (orders, the order, graded)
    assert [step.progress_score for step in episode.steps] == [0.333, 0.667, 1.0]


def test_a_port_in_use_is_one_clear_line_without_a_banner(server):
    """The module's server holds its port: a second serve-api there must not claim to serve."""
    port = int(server.rsplit(":", 1)[1])
    proc = subprocess.run(
        [sys.executable, "-m", "loraloop.cli", "serve", "task-server", "--port", str(port)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 1 and "Task server" not in proc.stderr + proc.stdout
    assert proc.stderr.strip() == f"error: cannot listen on 127.0.0.1:{port}: Address already in use"


def raw(base, path, body: bytes):
    """A hand-written JSON body (NaN, Infinity and lone surrogates are JSON that json= will not send)."""
    return httpx.post(base + path, content=body, headers={"Content-Type": "application/json"}, timeout=60)


def test_hostile_bodies_get_a_4xx_that_names_the_field(server):
    """Each of these was a 500 (or was run and stored whole) before the request guards."""
    nan = raw(server, "/api/episode/step", b'{"episode_id": NaN, "action": {"content": "x"}}')
    assert nan.status_code == 422 and "episode_id: nan is not a number JSON allows" in nan.text
    lone = raw(server, "/api/episode/step", b'{"episode_id": "e", "action": {"content": "ls \\ud800"}}')
    assert lone.status_code == 422 and "action.content: character 3 is a lone surrogate" in lone.text
    key = raw(server, "/api/episode/start", b'{"sample_id": 0, "config": {"\\udc00": 1}}')
    assert key.status_code == 422 and "is a lone surrogate" in key.text
    for protocol in (["text"], {"a": 1}):
        bad = call(server, "POST", "/api/episode/start", {"sample_id": 0, "config": {"protocol": protocol}})
        assert bad.status_code == 400 and "config.protocol must be one of" in bad.json()["detail"]
    huge = call(server, "POST", "/api/episode/step", {"episode_id": "e", "action": {"content": "x" * 2_000_000}})
    assert huge.status_code == 413 and "LORALOOP_API_MAX_BODY_BYTES" in huge.json()["detail"]
    long_action = call(server, "POST", "/api/episode/step", {"episode_id": "e", "action": {"content": "x" * 70_000}})
    assert long_action.status_code == 422 and long_action.json()["detail"][0]["loc"] == ["body", "action", "content"]
    long_id = call(server, "POST", "/api/episode/step", {"episode_id": "e" * 500_000, "action": {"content": "x"}})
    assert long_id.status_code == 422 and "at most 128 characters" in long_id.text and "eeee" not in long_id.text
    chunked = httpx.post(
        server + "/api/episode/step",
        content=iter([b'{"episode_id": "', b"e" * (1 << 20), b'"}']),
        headers={"Content-Type": "application/json"},
        timeout=60,
    )  # no Content-Length to trust
    assert chunked.status_code == 413
    assert call(server, "GET", "/api/health").json()["active_episodes"] == 0


@pytest.mark.serial  # the flood must hold the pids when the next step comes: alone, not under load
def test_a_fork_bomb_ends_the_episode_as_an_environment_failure_and_frees_its_container(replicas):
    """The replica that goes on with the episode cannot start a shell in a container whose pids a fork bomb
    holds: the episode ends as env_error with the cause, is stored, and its container is removed."""
    a, b = replicas["urls"]
    episode = call(a, "POST", "/api/episode/start", {"sample_id": "test-files-00000", "config": {}}).json()[
        "episode_id"
    ]
    # The classic `:(){ :|:& };:` churns: its children die as fast as they fork, so a new shell now and then found
    # a free pid. This bomb forks processes that stay, in the background, until none is left: once full, no pid is
    # ever freed, so what follows is the same on every run.
    flood = "{ while :; do sleep 3600 & done; } 2>/dev/null &"
    bomb = call(a, "POST", "/api/episode/step", {"episode_id": episode, "action": {"content": bash(flood)}})
    assert bomb.status_code == 200 and bomb.json()["done"] is False
    (box,) = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"label=loraloop.episode={episode}"], capture_output=True, text=True
    ).stdout.split()
    # `docker exec box true` is no test of it: joining a cgroup is not a fork, so exec works at pids.max. A shell
    # that runs two commands must fork for the first, as the Task Server's new shell must: wait until that fails.
    forks = ["docker", "exec", box, "sh", "-c", "ls / >/dev/null; true"]
    deadline = time.monotonic() + 60
    while subprocess.run(forks, capture_output=True, timeout=30).returncode == 0:
        assert time.monotonic() < deadline, "the fork bomb never took the container's last pid"
        time.sleep(0.5)
    after = call(b, "POST", "/api/episode/step", {"episode_id": episode, "action": {"content": bash("echo hi")}})
    assert after.status_code == 200, after.text
    end = after.json()
    assert end["done"] is True and end["info"]["status"] == "env_error"
    assert "no shell could start in container" in end["info"]["error"]
    container = end["info"]["error"].split("no shell could start in container ")[1].split(":")[0]
    for label in (f"id={container}", f"label=loraloop.episode={episode}"):
        assert subprocess.run(["docker", "ps", "-aq", "--filter", label], capture_output=True, text=True).stdout == ""
    stored = list((replicas["store"] / "trajectories" / "os-shared" / "shared").glob("*.jsonl"))
    last = json.loads(stored[0].read_text().splitlines()[-1])
    assert last["type"] == "episode_end" and last["status"] == "env_error" and "no shell" in last["error"]
    assert call(a, "POST", "/api/episode/step", {"episode_id": episode, "action": {"content": "x"}}).status_code == 400
