"""Workers reach a remote Docker engine through DOCKER_HOST (here a second dockerd on 127.0.0.1 TCP)."""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from tests.helpers import free_port, wait_port

pytestmark = pytest.mark.usefixtures("docker_ready")
IMAGE = "debian:bookworm-slim"  # the locally made base: small to copy, and bash + coreutils are enough


class PrivateEngine:
    """A second, private dockerd on a loopback TCP port holding only the base image; it can be restarted."""

    def __init__(self, root):
        self.root, self.port = root, free_port()
        self.host = f"tcp://127.0.0.1:{self.port}"
        self.env = {**os.environ, "DOCKER_HOST": self.host}
        self.start()
        save = subprocess.Popen(["docker", "save", IMAGE], stdout=subprocess.PIPE)
        subprocess.run(["docker", "load", "-q"], stdin=save.stdout, env=self.env, check=True, capture_output=True)
        save.wait()

    def start(self):
        self.proc = subprocess.Popen(
            [
                "dockerd",
                "--host",
                self.host,
                "--data-root",
                str(self.root / "data"),
                "--exec-root",
                str(self.root / "exec"),
                "--pidfile",
                str(self.root / "dockerd.pid"),
                "--bridge=none",
                "--iptables=false",
                "--ip-masq=false",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(self.root / "dockerd.log", "a"),
        )
        wait_port(self.port, 60)
        deadline = time.monotonic() + 60
        while subprocess.run(["docker", "info"], env=self.env, capture_output=True).returncode != 0:
            assert time.monotonic() < deadline, (self.root / "dockerd.log").read_text()[-2000:]
            time.sleep(0.5)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)

    def containers(self):
        """Every environment container on this engine, as (id, state)."""
        out = subprocess.run(
            ["docker", "ps", "-a", "--filter", "label=loraloop.role=shell-env", "--format", "{{.ID}} {{.State}}"],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return [tuple(line.split()) for line in out.splitlines()]


@pytest.fixture(scope="module")
def remote_engine(tmp_path_factory):
    root = tmp_path_factory.mktemp("engine2")
    engine = PrivateEngine(root)
    yield engine
    engine.stop()
    shutil.rmtree(root, ignore_errors=True)


def created(engine_env, since, until):
    events = subprocess.run(
        [
            "docker",
            "events",
            "--since",
            str(since),
            "--until",
            str(until),
            "--format",
            "{{json .}}",
            "--filter",
            "type=container",
            "--filter",
            "event=create",
        ],
        env=engine_env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [json.loads(line) for line in events.splitlines()]


def test_rollout_runs_its_containers_on_the_engine_docker_host_names(remote_engine, tmp_path):
    registry = tmp_path / "tasks"
    registry.mkdir()
    (registry / "echo.json").write_text(
        json.dumps(
            [{"description": f"Print {n}.", "evaluation": {"match": str(n), "example": f"echo {n}"}} for n in range(3)]
        )
    )
    env = {
        **os.environ,
        "DOCKER_HOST": remote_engine.host,
        "LORALOOP_OS_ENV_IMAGE": IMAGE,
        "LORALOOP_STORE_URL": f"file://{tmp_path / 'store'}",
    }
    since = int(time.time()) - 1
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "loraloop.cli",
            "rollout",
            "--experiment",
            "teacher",
            "--task_registry",
            str(registry),
            "--run_id",
            "remote",
        ],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, stderr = proc.communicate(timeout=300)
    until = int(time.time()) + 1
    assert proc.returncode == 0, stderr
    assert "3/3 solved" in stderr.replace("\n", " ")
    remote = created(env, since, until)
    assert len(remote) == 3 and all(e["Actor"]["Attributes"]["image"] == IMAGE for e in remote)
    owners = {e["Actor"]["Attributes"]["loraloop.owner"] for e in remote}
    assert owners == {f"{os.uname().nodename}:{proc.pid}"}
    local = [
        e
        for e in created(os.environ, since, until)
        if e["Actor"]["Attributes"].get("loraloop.owner") == f"{os.uname().nodename}:{proc.pid}"
    ]
    assert local == []  # nothing of this rollout ran on the default engine
    leftover = subprocess.run(["docker", "ps", "-aq"], env=env, capture_output=True, text=True).stdout
    assert leftover.strip() == ""


def test_an_engine_restart_rebuilds_the_pool_and_leaves_no_container(remote_engine, monkeypatch):
    """The engine restarts under a warm pool: its spares' shells die with it. The next episodes get fresh
    containers (the dead spares are removed, not handed out), and nothing is left once the pool closes."""
    from loraloop.envs.shell import docker
    from loraloop.envs.shell.pool import ContainerPool
    from loraloop.settings import Settings

    monkeypatch.setenv("DOCKER_HOST", remote_engine.host)
    limits = docker.Limits.from_settings(Settings())
    pool = ContainerPool(2, 65536)
    try:
        pool.warm(IMAGE, limits)
        deadline = time.monotonic() + 60
        while pool.ready(IMAGE, limits) < 2:
            assert time.monotonic() < deadline, "the pool never filled"
            time.sleep(0.2)
        before = {cid for cid, _ in remote_engine.containers()}
        assert len(before) == 2
        remote_engine.stop()
        remote_engine.start()
        for _ in range(3):
            container, session = pool.acquire(IMAGE, limits, labels={"episode": "after-restart"})
            assert session.run("echo alive").output.strip() == "alive"
            session.close()
            docker.remove(container)
        deadline = time.monotonic() + 60
        while pool.ready(IMAGE, limits) < 2:
            time.sleep(0.2)
            assert time.monotonic() < deadline, "the pool was not rebuilt"
        now = remote_engine.containers()
        assert not before & {cid for cid, _ in now}, "a container from before the restart is left"
        assert [state for _, state in now] == ["running", "running"]
    finally:
        pool.close()
    assert remote_engine.containers() == []


def test_the_reaper_removes_stopped_containers_of_a_live_process(remote_engine, monkeypatch):
    """An engine restart stops containers a live worker still owns: the reaper removes them (it used to
    remove only those of dead processes), and leaves running ones."""
    from loraloop.envs.shell import docker
    from loraloop.settings import Settings

    monkeypatch.setenv("DOCKER_HOST", remote_engine.host)
    limits = docker.Limits.from_settings(Settings())
    stopped, running = (docker.run_container(IMAGE, labels={}, limits=limits) for _ in range(2))
    subprocess.run(["docker", "kill", stopped], env=remote_engine.env, check=True, capture_output=True)
    assert docker.reap() == 1
    assert remote_engine.containers() == [(running[:12], "running")]
    docker.remove(running)
