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


@pytest.fixture(scope="module")
def remote_engine(tmp_path_factory):
    """A second, private dockerd on a loopback TCP port holding only the base image."""
    root = tmp_path_factory.mktemp("engine2")
    port = free_port()
    host = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(["dockerd", "--host", host, "--data-root", str(root / "data"),
                             "--exec-root", str(root / "exec"), "--pidfile", str(root / "dockerd.pid"),
                             "--bridge=none", "--iptables=false", "--ip-masq=false"],
                            stdout=subprocess.DEVNULL, stderr=open(root / "dockerd.log", "w"))
    env = {**os.environ, "DOCKER_HOST": host}
    try:
        wait_port(port, 60)
        deadline = time.monotonic() + 60
        while subprocess.run(["docker", "info"], env=env, capture_output=True).returncode != 0:
            assert time.monotonic() < deadline, (root / "dockerd.log").read_text()[-2000:]
            time.sleep(0.5)
        save = subprocess.Popen(["docker", "save", IMAGE], stdout=subprocess.PIPE)
        subprocess.run(["docker", "load", "-q"], stdin=save.stdout, env=env, check=True, capture_output=True)
        save.wait()
        yield host
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        shutil.rmtree(root, ignore_errors=True)


def created(engine_env, since, until):
    events = subprocess.run(["docker", "events", "--since", str(since), "--until", str(until), "--format",
                             "{{json .}}", "--filter", "type=container", "--filter", "event=create"],
                            env=engine_env, capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in events.splitlines()]


def test_rollout_runs_its_containers_on_the_engine_docker_host_names(remote_engine, tmp_path):
    registry = tmp_path / "tasks"
    registry.mkdir()
    (registry / "echo.json").write_text(json.dumps([
        {"description": f"Print {n}.", "evaluation": {"match": str(n), "example": f"echo {n}"}} for n in range(3)]))
    env = {**os.environ, "DOCKER_HOST": remote_engine, "LORALOOP_OS_ENV_IMAGE": IMAGE,
           "LORALOOP_STORE_URL": f"file://{tmp_path / 'store'}"}
    since = int(time.time()) - 1
    proc = subprocess.Popen([sys.executable, "-m", "loraloop.cli", "rollout", "--experiment", "teacher",
                             "--task_registry", str(registry), "--run_id", "remote"], env=env,
                            stderr=subprocess.PIPE, text=True)
    _, stderr = proc.communicate(timeout=300)
    until = int(time.time()) + 1
    assert proc.returncode == 0, stderr
    assert "3/3 solved" in stderr.replace("\n", " ")
    remote = created(env, since, until)
    assert len(remote) == 3 and all(e["Actor"]["Attributes"]["image"] == IMAGE for e in remote)
    owners = {e["Actor"]["Attributes"]["loraloop.owner"] for e in remote}
    assert owners == {f"{os.uname().nodename}:{proc.pid}"}
    local = [e for e in created(os.environ, since, until)
             if e["Actor"]["Attributes"].get("loraloop.owner") == f"{os.uname().nodename}:{proc.pid}"]
    assert local == []  # nothing of this rollout ran on the default engine
    leftover = subprocess.run(["docker", "ps", "-aq"], env=env, capture_output=True, text=True).stdout
    assert leftover.strip() == ""
