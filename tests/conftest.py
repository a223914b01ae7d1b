"""Fixtures that start real servers on loopback: Redis, an S3 server (SeaweedFS), vLLM CPU.

Docker must answer already (`make test` starts a private dockerd and builds the images).
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
os.chdir(ROOT)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_port(port: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")


def wait_s3(endpoint: str, timeout: float = 60.0) -> None:
    """Wait until the S3 server at `endpoint` stores and deletes an object (its port opens earlier)."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="x", aws_secret_access_key="x",
                      region_name="us-east-1", config=Config(retries={"max_attempts": 0}, read_timeout=10))
    deadline = time.monotonic() + timeout
    while True:
        try:
            s3.create_bucket(Bucket="ready-probe")
            s3.put_object(Bucket="ready-probe", Key="probe", Body=b"x")
            s3.delete_object(Bucket="ready-probe", Key="probe")
            s3.delete_bucket(Bucket="ready-probe")
            return
        except (BotoCoreError, ClientError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.fixture(scope="session")
def docker_ready() -> None:
    proc = subprocess.run(["docker", "info"], capture_output=True)
    assert proc.returncode == 0, "no Docker engine answers: run 'make docker images' first"
    proc = subprocess.run(["docker", "image", "inspect", "loraloop/os-env:latest"], capture_output=True)
    assert proc.returncode == 0, "image loraloop/os-env:latest missing: run 'make images'"


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    port = free_port()
    proc = subprocess.Popen([shutil.which("redis-server") or "redis-server", "--bind", "127.0.0.1", "--port",
                             str(port), "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL)
    wait_port(port)
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait()


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory):
    weed = Path(sys.executable).parent / "weed"
    data = tmp_path_factory.mktemp("seaweed")
    port = free_port()
    proc = subprocess.Popen([str(weed), "mini", f"-dir={data}", "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
                             f"-s3.port={port}", f"-master.port={free_port()}", f"-volume.port={free_port()}",
                             f"-filer.port={free_port()}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_port(port, 60)
    wait_s3(f"http://127.0.0.1:{port}")
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait()


@pytest.fixture
def settings_for(tmp_path):
    """Build Settings for a test: a file store under tmp_path unless overridden."""
    from loraloop.settings import Settings

    def make(**overrides):
        values = {"store_url": f"file://{tmp_path / 'store'}", "adapters_dir": tmp_path / "adapters"}
        values.update(overrides)
        return Settings(**values)

    return make


@pytest.fixture(scope="session")
def vllm_url():
    """A real vLLM CPU server with SmolLM2-135M-Instruct on a free port (about 45 s to start)."""
    from loraloop.serve import vllm_server
    from loraloop.settings import Settings

    port = free_port()
    settings = Settings(vllm_port=port)
    url = vllm_server.start(settings, port=port)
    yield url
    vllm_server.stop(port)


@pytest.fixture(scope="session")
def sites_url():
    """The bundled task sites (shop, mail; package loraloop_sites) served by uvicorn in a background thread
    on a free port."""
    from loraloop_sites import serving

    with serving() as url:
        yield url
