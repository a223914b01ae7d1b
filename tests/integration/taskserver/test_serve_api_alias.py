"""`loraloop serve-api`, the Task Server's old name, still serves it and says it is deprecated."""

import subprocess

import httpx
import pytest

from tests.helpers import LORALOOP, ROOT, free_port, wait_port


@pytest.mark.usefixtures("docker_ready")
def test_old_serve_api_name_still_serves_the_task_server():
    port = free_port()
    proc = subprocess.Popen(
        LORALOOP + ["serve-api", "--task", "os-alias", "--port", str(port)], cwd=ROOT, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_port(port, 60)
        health = httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=30).json()
        assert health["status"] == "healthy" and health["task_name"] == "os-alias"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    note = proc.stderr.readline()
    assert "'serve-api' is deprecated" in note and "loraloop serve task-server" in note
