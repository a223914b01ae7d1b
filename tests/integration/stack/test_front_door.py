"""`make demo`'s bad input, caused for real: no Docker engine to be had, no disk space for the model, the
model server's port taken. Each gets a message naming what is missing and the command that fixes it, with
no traceback and nothing half-written."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

LORALOOP = [sys.executable, "-m", "loraloop.cli"]


def test_no_docker_engine_and_no_dockerd_names_the_package_to_install(tmp_path):
    """No engine answers and `dockerd` is not on PATH: scripts/dockerd.sh (what `make images` and so `make
    demo` run first) says so and names the install command."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("docker", "bash", "mkdir", "dirname", "id", "seq", "sleep", "cat"):
        found = subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        if found.startswith("/"):
            (bin_dir / tool).symlink_to(found)
    env = {
        **os.environ,
        "PATH": str(bin_dir),
        "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock",
        "LORALOOP_STATE_DIR": str(tmp_path / "state"),
    }
    proc = subprocess.run(["bash", "scripts/dockerd.sh", "start"], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "dockerd is not installed" in proc.stderr and "apt-get install -y docker.io" in proc.stderr


@pytest.fixture
def small_disk(tmp_path):
    """A real 32 MiB tmpfs: too small for the prepared model (about 270 MB)."""
    mount = tmp_path / "small"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(mount)], check=True)
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


def test_no_disk_space_for_the_model_is_named_and_nothing_is_written(small_disk):
    proc = subprocess.run(
        LORALOOP + ["models", "prepare", "smollm2-135m", "--out", str(small_disk / "model")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    message = " ".join(proc.stderr.split())
    assert "GiB free under" in message and str(small_disk) in message and "LORALOOP_MODEL_DIR" in message
    assert list(small_disk.iterdir()) == []


def test_a_taken_port_is_named_with_the_setting_that_moves_vllm(tmp_path):
    """Something that is not vLLM listens on the model server's port: starting vLLM fails at once (not after
    vLLM's own start and a line deep in its log), naming the port and LORALOOP_VLLM_PORT."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "LORALOOP_VLLM_PORT": str(port), "LORALOOP_VLLM_URL": f"http://127.0.0.1:{port}/v1"}
        proc = subprocess.run(
            LORALOOP + ["serve", "vllm", "start"], env=env, capture_output=True, text=True, timeout=60
        )
    message = " ".join(proc.stderr.split())
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert f"port {port} is taken" in message and "LORALOOP_VLLM_PORT" in message
    assert not Path(f"volumes/.run/vllm-{port}.pid").exists()


@pytest.mark.usefixtures("docker_ready")
def test_make_up_that_fails_shows_the_log_of_each_service_that_did_not_come_up(tmp_path):
    """`make up` fails on an unhealthy or crashed service: scripts/up-failed.sh names each one and prints the end
    of its log (CI once saw only "container … is unhealthy" while the cause was a traceback inside). A real
    Compose project of two services: one whose healthcheck fails, one that exits 3; a healthy one is not named."""
    (tmp_path / "compose.yaml").write_text(
        "services:\n"
        "  sick: {image: 'debian:bookworm-slim', network_mode: none,\n"
        "         command: [sh, -c, 'echo Traceback: boom; sleep 60'],\n"
        "         healthcheck: {test: [CMD, 'false'], interval: 1s, retries: 2}}\n"
        "  crashed: {image: 'debian:bookworm-slim', network_mode: none, restart: 'no',\n"
        "            command: [sh, -c, 'echo died; exit 3']}\n"
        "  fine: {image: 'debian:bookworm-slim', network_mode: none, command: [sleep, '60'],\n"
        "         healthcheck: {test: [CMD, 'true'], interval: 1s}}\n"
    )
    dc = ["docker", "compose", "-p", f"upfailed{os.getpid()}", "-f", str(tmp_path / "compose.yaml")]
    try:
        assert subprocess.run([*dc, "up", "-d", "--wait"], capture_output=True, timeout=120).returncode != 0
        proc = subprocess.run(["bash", "scripts/up-failed.sh", *dc], capture_output=True, text=True, timeout=60)
    finally:
        subprocess.run([*dc, "down", "-t", "0"], capture_output=True, timeout=120)
    assert proc.returncode == 1
    assert "sick did not come up" in proc.stderr and "Traceback: boom" in proc.stderr
    assert "crashed did not come up" in proc.stderr and "died" in proc.stderr
    assert "fine" not in proc.stderr
    assert proc.stderr.splitlines()[-1] == "make up: not up: crashed (exited, exit 3) sick (unhealthy, running, exit 0)"
