"""The Compose stack: every file and profile validates, and the CI-sized stack runs for real."""

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import httpx
import pytest
import tomllib

from loraloop.settings import Settings
from loraloop.store import open_store
from tests.helpers import image_tag, smollm_adapter

FILES = [
    ["compose.yaml"],
    ["compose.yaml", "compose.cpu.yaml"],
    ["compose.yaml", "compose.cpu.yaml", "compose.ci.yaml"],
    ["compose.train.yaml"],
    ["compose.yaml", "compose.host-engine.yaml"],
]
PROFILES = ["", "lora", "monitor", "*"]
ENV_FILE = Path(tempfile.mkdtemp(prefix="loraloop-env-")) / "test.env"  # `make env`'s output: .env.example + a password
subprocess.run(["bash", "scripts/env.sh", "new", str(ENV_FILE)], check=True, capture_output=True)
CI = {
    "PROJECT": "loraloop-citest",
    "COMPOSE_FILES": "-f compose.yaml -f compose.cpu.yaml -f compose.ci.yaml",
    "ENV_FILE": str(ENV_FILE),
}
CI_PORTS = {"vllm": 28000, "s3": 28333}  # compose.ci.yaml's defaults
HOST_SOCKET = "/var/run/docker.sock"
ENVD_SOCKET = "unix:///run/envd/docker.sock"


def compose(files, *args, env_file=str(ENV_FILE)):
    cmd = ["docker", "compose", "--env-file", env_file]
    for f in files:
        cmd += ["-f", f]
    return subprocess.run(cmd + list(args), capture_output=True, text=True)


@pytest.mark.parametrize("files", FILES, ids=["+".join(f) for f in FILES])
@pytest.mark.parametrize("profile", PROFILES, ids=["default", "lora", "monitor", "all"])
def test_every_file_and_profile_validates(files, profile):
    args = (["--profile", profile] if profile else []) + ["config", "-q"]
    proc = compose(files, *args)
    assert proc.returncode == 0, proc.stderr


def config(files):
    proc = compose(files, "--profile", "*", "config", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["services"]


@pytest.mark.parametrize("files", FILES, ids=["+".join(f) for f in FILES])
def test_every_image_and_build_base_has_a_fixed_tag(files):
    """No image floats (no tag, or `latest`), so that a new release upstream cannot change a stack; the
    images built here carry the package's version."""
    version = tomllib.loads(Path("pyproject.toml").read_text())["project"]["version"]
    refs = {}
    for name, svc in config(files).items():
        refs[f"{name}: image"] = svc["image"]
        if "BASE" in svc.get("build", {}).get("args", {}):
            refs[f"{name}: build arg BASE"] = svc["build"]["args"]["BASE"]
    floating = {where: ref for where, ref in refs.items() if image_tag(ref) in (None, "latest")}
    assert not floating, f"images without a fixed tag in {files}: {floating}"
    ours = {where: ref for where, ref in refs.items() if ref.startswith("loraloop/")}
    assert ours and all(image_tag(ref) == version for ref in ours.values()), ours


@pytest.mark.parametrize("files", FILES[:3], ids=["+".join(f) for f in FILES[:3]])
def test_the_task_sites_are_a_healthy_service_the_workers_wait_for(files):
    """`sites` in every stack: built from the local base, a healthcheck, the workers' depends_on
    condition and LORALOOP_SITES_URL (service name by default, CI's loopback port with compose.ci.yaml)."""
    services = config(files)
    sites, worker = services["sites"], services["rollout-worker"]
    assert sites["image"].startswith("loraloop/sites:") and sites["build"]["args"]["BASE"] == "debian:bookworm-slim"
    assert sites["healthcheck"]["test"][0] == "CMD"
    assert worker["depends_on"]["sites"]["condition"] == "service_healthy"
    ci = "compose.ci.yaml" in files
    assert worker["environment"]["LORALOOP_SITES_URL"] == ("http://127.0.0.1:28090" if ci else "http://sites:8090")
    sites_url = worker["environment"]["LORALOOP_SITES_URL"]
    assert worker["environment"]["LORALOOP_MINIWOB_URL"] == f"{sites_url}/miniwob-html/miniwob/"  # the sites serve it
    if ci:
        assert sites["network_mode"] == "host" and not sites.get("ports")
        assert sites["command"][-4:] == ["--host", "127.0.0.1", "--port", "28090"]
        assert "28090/healthz" in sites["healthcheck"]["test"][-1]
    else:
        assert [(p["host_ip"], p["published"], p["target"]) for p in sites["ports"]] == [("127.0.0.1", "8090", 8090)]


@pytest.mark.parametrize("files", FILES[:2], ids=["+".join(f) for f in FILES[:2]])
def test_adapter_sync_serves_the_stores_adapters_to_vllm(files):
    """Profile lora: adapter-sync waits for vllm, calls it by service name and unpacks adapters into the
    folder vllm reads as /adapters."""
    services = config(files)
    sync, vllm = services["adapter-sync"], services["vllm"]
    assert sync["profiles"] == ["lora"] and sync["command"][:3] == ["loraloop", "adapters", "sync"]
    assert sync["depends_on"]["vllm"]["condition"] == "service_healthy"
    env = sync["environment"]
    assert env["LORALOOP_VLLM_URL"] == "http://vllm:8000/v1" and env["LORALOOP_VLLM_ADAPTERS_DIR"] == "/adapters"
    ours = {v["target"]: v["source"] for v in sync["volumes"]}
    theirs = {v["target"]: v["source"] for v in vllm["volumes"]}
    assert ours[env["LORALOOP_ADAPTERS_DIR"]] == theirs["/adapters"]
    assert "/tmp/adapter-sync.ok" in sync["healthcheck"]["test"][-1]


def socket_mounts(services: dict) -> list[str]:
    """The services that mount the host's Docker socket."""
    return sorted(
        name for name, svc in services.items() if any(v.get("source") == HOST_SOCKET for v in svc.get("volumes", []))
    )


def go_seconds(duration: str) -> int:
    """A Go duration as compose prints it ('15m0s', '10m0s', '45s') in seconds."""
    parts = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", duration)
    assert parts and duration, duration
    hours, minutes, seconds = (int(p or 0) for p in parts.groups())
    return hours * 3600 + minutes * 60 + seconds


@pytest.mark.parametrize("files", FILES[1:3], ids=["+".join(f) for f in FILES[1:3]])
def test_the_cpu_engine_has_fifteen_minutes_to_start_before_a_probe_counts(files):
    """A CPU vLLM took over six minutes to start on a loaded 2-core CI runner and `make up` gave up on it
    (60 s start period + 60 probes of 5 s); failures inside start_period do not count, so that is the budget."""
    assert go_seconds(config(files)["vllm"]["healthcheck"]["start_period"]) >= 900


@pytest.mark.parametrize("files", FILES[:3], ids=["+".join(f) for f in FILES[:3]])
def test_every_service_has_five_minutes_to_start_before_a_probe_counts(files):
    """On a loaded CI runner `make up` gave up on services that were still starting (stop 38: the CI stack's `up
    --wait` failed while vLLM had just come up). Every healthcheck has a start period of 5 minutes or more (the
    first success ends it, so an idle host waits no longer), the Python services and envd 10 or more."""
    checked = {name: svc["healthcheck"] for name, svc in config(files).items() if "healthcheck" in svc}
    assert {"redis", "minio", "sites", "envd", "rollout-api", "rollout-worker", "task-server"} <= set(checked)
    short = {
        name: check.get("start_period", "0s")
        for name, check in checked.items()
        if go_seconds(check.get("start_period", "0s")) < (300 if name in ("redis", "minio") else 600)
        and not (name == "vllm" and files == FILES[0])  # the GPU engine: 60 s + 90 probes of 10 s
    }
    assert short == {}, short


@pytest.mark.parametrize("files", FILES[:3], ids=["+".join(f) for f in FILES[:3]])
def test_no_service_mounts_the_host_socket_environment_containers_run_in_envd(files):
    """The workers and the task server reach envd through its socket volume once it is healthy; envd is
    not privileged and publishes nothing. WORKER_DOCKER_HOST still points them at another engine."""
    services = config(files)
    assert socket_mounts(services) == []
    envd = services["envd"]
    assert not envd.get("privileged") and not envd.get("ports") and "/dev/loop-control" in str(envd["devices"])
    assert {v["source"]: v["target"] for v in envd["volumes"] if v["type"] == "volume"}["envd-socket"] == "/run/envd"
    for name in ("rollout-worker", "task-server"):
        svc = services[name]
        assert svc["environment"]["DOCKER_HOST"] == ENVD_SOCKET, name
        assert [(v["source"], v["target"]) for v in svc["volumes"]] == [("envd-socket", "/run/envd")], name
        assert svc["depends_on"]["envd"]["condition"] == "service_healthy", name


def test_worker_docker_host_and_the_host_engine_override(tmp_path):
    """WORKER_DOCKER_HOST moves the workers and the task server to another engine; compose.host-engine.yaml
    gives them the host's socket (the old way, opt-in) and leaves envd out."""
    env_file = tmp_path / "remote.env"
    env_file.write_text(ENV_FILE.read_text() + "WORKER_DOCKER_HOST=tcp://127.0.0.1:2376\n")
    proc = compose(["compose.yaml"], "config", "--format", "json", env_file=str(env_file))
    assert proc.returncode == 0, proc.stderr
    remote = json.loads(proc.stdout)["services"]
    assert {remote[n]["environment"]["DOCKER_HOST"] for n in ("rollout-worker", "task-server")} == {
        "tcp://127.0.0.1:2376"
    }
    host = json.loads(compose(["compose.yaml", "compose.host-engine.yaml"], "config", "--format", "json").stdout)
    assert "envd" not in host["services"] and socket_mounts(host["services"]) == ["rollout-worker", "task-server"]
    assert all("envd" not in host["services"][n]["depends_on"] for n in ("rollout-worker", "task-server"))


def test_make_up_refuses_an_env_file_that_points_workers_at_the_host_socket(tmp_path):
    """An .env from before envd names the host's socket, which no service mounts now: `make up` says so."""
    env_file = tmp_path / "old.env"
    env_file.write_text(ENV_FILE.read_text() + f"WORKER_DOCKER_HOST=unix://{HOST_SOCKET}\n")
    proc = subprocess.run(
        ["make", "up", f"ENV_FILE={env_file}", "PROJECT=loraloop-refused"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode != 0 and "compose.host-engine.yaml" in proc.stderr and "docker compose" not in proc.stdout


def gpu_services(services: dict) -> list[str]:
    """The services that reserve a GPU."""
    return [
        name
        for name, svc in services.items()
        if any(
            "gpu" in d.get("capabilities", [])
            for d in svc.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices", [])
        )
    ]


def test_one_gpu_runs_one_vllm_for_the_base_model_and_the_adapters(tmp_path):
    """`--profile lora up` on one GPU starts one vLLM, LoRA on, with runtime loading, that serves the base model
    and every adapter, its share of the GPU set by VLLM_GPU_MEMORY_UTILIZATION; the trainer's share beside it
    comes from LORALOOP_TRAIN_GPU_FRACTION; the trainer's `train rl` plays its rollouts on the stack's workers."""
    env_file = tmp_path / "shared.env"
    env_file.write_text(ENV_FILE.read_text() + "VLLM_GPU_MEMORY_UTILIZATION=0.35\nLORALOOP_TRAIN_GPU_FRACTION=0.6\n")
    proc = compose(["compose.yaml"], "--profile", "*", "config", "--format", "json", env_file=str(env_file))
    assert proc.returncode == 0, proc.stderr
    services = json.loads(proc.stdout)["services"]
    assert gpu_services(services) == ["vllm"]
    vllm = services["vllm"]
    command = vllm["command"]
    assert "--enable-lora" in command and vllm["environment"]["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True"
    assert command[command.index("--gpu-memory-utilization") + 1] == "0.35"
    trainer = json.loads(compose(["compose.train.yaml"], "config", "--format", "json", env_file=str(env_file)).stdout)[
        "services"
    ]["trainer"]
    assert trainer["environment"]["LORALOOP_TRAIN_GPU_FRACTION"] == "0.6"
    assert trainer["environment"]["LORALOOP_VLLM_URL"] == "http://vllm:8000/v1"
    assert trainer["environment"]["LORALOOP_BROKER_URL"] == "redis://redis:6379/0"  # RL's rollouts on the workers


ONE_GPU = {  # docs/gpu.md's "One GPU" table: VLLM_GPU_MEMORY_UTILIZATION, LORALOOP_TRAIN_GPU_FRACTION
    "80GB": ("0.35", "0.6"),
    "24GB": ("0.45", "0.5"),
    "one-at-a-time": ("0.9", ""),
}
STACKS = {"base": "", "lora": "lora", "gateway": "gateway", "all": "*"}  # the stack's profiles beside the trainer


@pytest.mark.parametrize("split", ONE_GPU)
def test_every_gpu_combination_with_the_docs_split_fits_one_card(tmp_path, split):
    """Base alone, lora, gateway, train, and each with train beside it: one vLLM and one trainer reserve the GPU, vLLM
    takes the docs' share, the trainer gets its own and vLLM's, and the two fit on the card: `make up`'s check and the
    trainer's Settings (which every `loraloop` command in its container reads first) both take them."""
    served, train = ONE_GPU[split]
    env_file = tmp_path / "gpu.env"
    env_file.write_text(
        ENV_FILE.read_text() + f"VLLM_GPU_MEMORY_UTILIZATION={served}\nLORALOOP_TRAIN_GPU_FRACTION={train}\n"
    )
    check = subprocess.run(["bash", "scripts/env.sh", "check", str(env_file)], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    proc = compose(["compose.train.yaml"], "config", "--format", "json", env_file=str(env_file))
    assert proc.returncode == 0, proc.stderr
    trainer = json.loads(proc.stdout)["services"]
    assert gpu_services(trainer) == ["trainer"]
    environment = trainer["trainer"]["environment"]
    shares = Settings(
        vllm_gpu_memory_utilization=environment["LORALOOP_VLLM_GPU_MEMORY_UTILIZATION"],
        train_gpu_fraction=environment["LORALOOP_TRAIN_GPU_FRACTION"],
    )
    assert shares.train_gpu_fraction == (float(train) if train else None)
    for profile in STACKS.values():
        args = (["--profile", profile] if profile else []) + ["config", "--format", "json"]
        proc = compose(["compose.yaml"], *args, env_file=str(env_file))
        assert proc.returncode == 0, proc.stderr
        services = json.loads(proc.stdout)["services"]
        assert gpu_services(services) == ["vllm"]  # one server for the base model and the adapters
        command = services["vllm"]["command"]
        assert float(command[command.index("--gpu-memory-utilization") + 1]) == shares.vllm_gpu_memory_utilization
        assert shares.vllm_gpu_memory_utilization + (shares.train_gpu_fraction or 0) <= 1 or not train


@pytest.mark.parametrize("missing", ["MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD", "TASK_SERVER_TOKEN"])
def test_a_missing_secret_is_named(tmp_path, missing):
    env_file = tmp_path / "partial.env"
    env_file.write_text(
        "".join(
            f"{given}=something-long-enough\n"
            for given in ("MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD", "TASK_SERVER_TOKEN")
            if given != missing
        )
    )
    proc = compose(["compose.yaml"], "config", "-q", env_file=str(env_file))
    assert proc.returncode != 0 and f"set {missing} in .env" in proc.stderr


@pytest.mark.parametrize(
    "line", ["", "MINIO_ROOT_PASSWORD=", "MINIO_ROOT_PASSWORD=change-me-please", "MINIO_ROOT_PASSWORD=short"]
)
def test_make_up_refuses_an_env_file_without_a_password_of_its_own(tmp_path, line):
    """The example ships no working password; `make up` stops before Compose and says what to do."""
    env_file = tmp_path / "weak.env"
    env_file.write_text(
        "\n".join(
            entry
            for entry in Path(".env.example").read_text().splitlines()
            if not entry.startswith("MINIO_ROOT_PASSWORD=")
        )
        + f"\n{line}\n"
    )
    proc = subprocess.run(
        ["make", "up", f"ENV_FILE={env_file}", "PROJECT=loraloop-refused"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode != 0 and "MINIO_ROOT_PASSWORD" in proc.stderr
    assert ("make env" in proc.stderr) if line != "MINIO_ROOT_PASSWORD=short" else ("8 or more" in proc.stderr)
    assert "docker compose" not in proc.stdout  # refused before anything started


def test_make_env_writes_a_random_password_readable_by_its_owner_only(tmp_path):
    first, second = tmp_path / "a.env", tmp_path / "b.env"
    for path in (first, second):
        subprocess.run(["make", "env", f"ENV_FILE={path}"], check=True, capture_output=True, timeout=60)
    passwords = [
        next(line for line in p.read_text().splitlines() if line.startswith("MINIO_ROOT_PASSWORD="))
        for p in (first, second)
    ]
    assert passwords[0] != passwords[1] and all(len(p.split("=", 1)[1]) == 32 for p in passwords)
    assert oct(first.stat().st_mode)[-3:] == "600"
    tokens = [
        next(line for line in p.read_text().splitlines() if line.startswith("TASK_SERVER_TOKEN="))
        for p in (first, second)
    ]
    assert tokens[0] != tokens[1] and all(len(t.split("=", 1)[1]) == 32 for t in tokens)
    task_server = json.loads(compose(["compose.yaml"], "config", "--format", "json", env_file=str(first)).stdout)[
        "services"
    ]["task-server"]
    assert task_server["environment"]["LORALOOP_TASK_SERVER_TOKEN"] == tokens[0].split("=", 1)[1]
    assert subprocess.run(["bash", "scripts/env.sh", "check", str(first)]).returncode == 0
    kept = first.read_text()
    subprocess.run(["make", "env", f"ENV_FILE={first}"], check=True, capture_output=True, timeout=60)
    assert first.read_text() == kept


# compose's own verdict and scripts/up-failed.sh's lines: shown whole in a failure, before the logs' tails
VERDICT = re.compile(r"^make up: |unhealthy|dependency failed|didn't complete|is not running|[Ee]rror response")


def make(*targets, timeout=900, **extra):
    """`make TARGETS` for the CI project; a failure shows which services failed and why (every line of compose's
    verdict and of scripts/up-failed.sh's header lines), then the ends of stdout and stderr."""
    env = {**os.environ, **CI, **{k: str(v) for k, v in extra.items()}}
    proc = subprocess.run(
        ["make", *targets, *[f"{k}={v}" for k, v in {**CI, **extra}.items()]],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    verdict = "\n".join(line for line in proc.stderr.splitlines() if VERDICT.search(line))
    assert proc.returncode == 0, (
        f"make {' '.join(targets)}:\n{verdict}\n--- stdout:\n{proc.stdout[-2000:]}\n--- stderr:\n{proc.stderr[-3000:]}"
    )
    return proc


def leftovers():
    """Containers, networks and volumes of the CI project, and environment containers it labelled."""
    project = CI["PROJECT"]
    found = {}
    for kind, args in (
        ("containers", ["ps", "-aq", "--filter", f"label=com.docker.compose.project={project}"]),
        ("env containers", ["ps", "-aq", "--filter", f"label=loraloop.project={project}"]),
        ("networks", ["network", "ls", "-q", "--filter", f"label=com.docker.compose.project={project}"]),
        ("volumes", ["volume", "ls", "-q", "--filter", f"label=com.docker.compose.project={project}"]),
    ):
        found[kind] = subprocess.run(["docker", *args], capture_output=True, text=True).stdout.split()
    return found


def stack(*args) -> subprocess.CompletedProcess:
    """`docker compose ARGS` on the running CI stack (its files, env file and project)."""
    return compose(CI["COMPOSE_FILES"].split()[1::2], "-p", CI["PROJECT"], *args)


def host_containers() -> set[str]:
    """The ids of every container on the host's engine."""
    return set(
        subprocess.run(["docker", "ps", "-aq", "--no-trunc"], capture_output=True, text=True, check=True).stdout.split()
    )


def only_envd_is_reachable() -> None:
    """In the running stack the workers and the task server have no host socket and DOCKER_HOST is envd's:
    `docker ps` there lists none of the host's containers (the stack's redis among them), and a container
    started from a worker exists in envd, not on the host."""
    host, redis = host_containers(), stack("ps", "-q", "redis").stdout.strip()
    assert redis in host
    for service in ("rollout-worker", "task-server"):
        seen = stack(
            "exec",
            "-T",
            service,
            "sh",
            "-c",
            f'test ! -e {HOST_SOCKET} && echo "$DOCKER_HOST" && docker ps -aq --no-trunc',
        )
        assert seen.returncode == 0, f"{service}: {HOST_SOCKET} is there, or no engine: {seen.stdout}{seen.stderr}"
        docker_host, *ids = seen.stdout.split()
        assert docker_host == ENVD_SOCKET and not host & set(ids), (service, docker_host, host & set(ids))
    started = stack(
        "exec",
        "-T",
        "rollout-worker",
        "docker",
        "run",
        "-d",
        "--network",
        "none",
        "loraloop/os-env:latest",
        "sleep",
        "60",
    )
    assert started.returncode == 0, started.stderr
    container = started.stdout.strip()
    assert container not in host_containers()
    assert stack("exec", "-T", "envd", "docker", "rm", "-f", container).returncode == 0


@contextlib.contextmanager
def environment_containers_created():
    """While the block runs, the ids of the CI project's environment containers created in envd and on the
    host's engine, as two lists filled when it ends (`docker events`, streamed, so none is missed)."""
    events = [
        "docker",
        "events",
        "--filter",
        "type=container",
        "--filter",
        "event=create",
        "--filter",
        f"label=loraloop.project={CI['PROJECT']}",
        "--format",
        "{{.Actor.ID}}",
    ]
    compose_cmd = [
        "docker",
        "compose",
        "--env-file",
        str(ENV_FILE),
        *CI["COMPOSE_FILES"].split(),
        "-p",
        CI["PROJECT"],
        "exec",
        "-T",
        "envd",
    ]
    streams = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for cmd in (compose_cmd + events, events)]
    found: tuple[list[str], list[str]] = ([], [])
    try:
        yield found
    finally:
        for stream, ids in zip(streams, found):
            stream.terminate()
            ids.extend(stream.communicate(timeout=30)[0].split())


def built_images():
    """`image: size in MB` of every image the CI stack builds."""
    services = config(CI["COMPOSE_FILES"].split()[1::2])
    images = sorted({svc["image"] for svc in services.values() if "build" in svc})
    sizes = {}
    for image in images:
        size = subprocess.run(["docker", "image", "inspect", "-f", "{{.Size}}", image], capture_output=True, text=True)
        sizes[image] = f"{int(size.stdout) / 1e6:.0f} MB" if size.returncode == 0 else "not built"
    return sizes


def served_root(vllm_url: str, name: str, timeout: float = 120) -> str:
    """The path vLLM loaded adapter `name` from, once it serves it (fails after `timeout` s)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        models = httpx.get(f"{vllm_url}/models", timeout=10).json()["data"]
        found = [m["root"] for m in models if m["id"] == name]
        if found:
            return found[0]
        time.sleep(1)
    raise AssertionError(f"vLLM at {vllm_url} did not serve {name!r} within {timeout} s")


def stack_syncs_a_published_adapter(tmp_path) -> float:
    """Publish a SmolLM2 LoRA to the stack's store only; adapter-sync must make the stack's vLLM serve
    it, and serve it again after vLLM dropped it (as a restart does). Returns seconds to the first."""
    from loraloop.serve.publish import publish

    name, vllm = "ci-sync", f"http://127.0.0.1:{CI_PORTS['vllm']}/v1"
    shutil.rmtree(f"volumes/adapters/{name}", ignore_errors=True)
    settings = Settings(
        store_url="s3://loraloop",
        s3_endpoint_url=f"http://127.0.0.1:{CI_PORTS['s3']}",
        s3_access_key="x",
        s3_secret_key="x",
        vllm_url=vllm,
        adapters_dir=tmp_path / "adapters",
    )
    try:
        start = time.monotonic()
        assert (
            publish(settings, smollm_adapter(tmp_path / "lora", random_b=True, seed=5), name, load=False)["version"]
            == "v1"
        )
        assert served_root(vllm, f"{name}-v1") == f"/adapters/{name}/v1"  # served as <name>-v<k>
        took = time.monotonic() - start
        dropped = httpx.post(
            f"{vllm.removesuffix('/v1')}/v1/unload_lora_adapter", json={"lora_name": f"{name}-v1"}, timeout=30
        )
        assert dropped.status_code == 200, dropped.text
        assert served_root(vllm, f"{name}-v1") == f"/adapters/{name}/v1"
        return took
    finally:
        shutil.rmtree(f"volumes/adapters/{name}", ignore_errors=True)


@pytest.mark.timeout(1800)  # cold image builds (vLLM CPU, Chromium) take most of it
@pytest.mark.usefixtures("docker_ready")
def test_ci_stack_rolls_out_into_the_store_and_goes_away_cleanly(capsys, tmp_path):
    """Build from local bases, start vLLM (CPU) + redis + S3 + sites + envd + rollout-api + 2 workers +
    task-server, `make rollout` with the shell teacher, the web teacher (Chromium in the workers,
    the task sites as a service) and SmolLM2 through the stack, an adapter published to the store that
    adapter-sync makes vLLM serve (and serve again after vLLM lost it), then `make down`. The workers and
    the task server reach envd only: every shell episode's container is created there, none on the host."""
    started = time.monotonic()
    try:
        make("up", WORKERS=2, timeout=1500)
        up_s = time.monotonic() - started
        only_envd_is_reachable()
        api = "http://127.0.0.1:28081"
        with environment_containers_created() as (in_envd, on_host):
            proc = make(
                "rollout", EXPERIMENT="teacher", SUBSET="test", SAMPLE_SIZE=6, ROLLOUTS_PER_TASK=2, LORALOOP_API_URL=api
            )
            summary = " ".join(proc.stderr.split())
            assert "12/12 solved" in summary and "s3://loraloop/trajectories/teacher/" in summary
            run_id = summary.split("teacher run ")[1].split()[0]
            store = open_store(
                "s3://loraloop",
                Settings(s3_endpoint_url=f"http://127.0.0.1:{CI_PORTS['s3']}", s3_access_key="x", s3_secret_key="x"),
            )
            keys = list(store.list(f"trajectories/teacher/{run_id}/"))
            assert len(keys) == 12
            workers = {json.loads(store.get_bytes(k).splitlines()[0])["run_id"] for k in keys}
            assert workers == {run_id}
            jobs = httpx.get(f"{api}/api/jobs/{run_id}", timeout=30).json()
            assert jobs["done"] == 12 and jobs["state"] == "done"
            tasks = "http://127.0.0.1:25000/api"
            token = next(
                line.split("=", 1)[1]
                for line in ENV_FILE.read_text().splitlines()
                if line.startswith("TASK_SERVER_TOKEN=")
            )  # the stack's Task Server requires it
            assert (
                httpx.post(f"{tasks}/episode/start", json={"sample_id": "test-files-00000"}, timeout=60).status_code
                == 401
            )
            auth = {"Authorization": f"Bearer {token}"}
            episode = httpx.post(
                f"{tasks}/episode/start", json={"sample_id": "test-files-00000"}, headers=auth, timeout=120
            ).json()
            assert episode["observation"]["type"] == "messages"
            assert (
                httpx.post(
                    f"{tasks}/episode/cancel", json={"episode_id": episode["episode_id"]}, headers=auth, timeout=60
                ).json()["status"]
                == "cancelled"
            )
            assert len(list(store.list("trajectories/os-ci/"))) == 1
            model = make("rollout", EXPERIMENT="smollm_zero", SUBSET="test", SAMPLE_SIZE=2, LORALOOP_API_URL=api)
            model_run = " ".join(model.stderr.split()).split("smollm_zero run ")[1].split()[0]
            steps = [
                json.loads(line)
                for key in store.list(f"trajectories/smollm_zero/{model_run}/")
                for line in store.get_bytes(key).splitlines()
            ]
            assert len({s["task_id"] for s in steps if s["type"] == "episode_start"}) == 2
            assert {s["model"] for s in steps if s["type"] == "step"} == {"SmolLM2-135M-Instruct"}  # vLLM in the stack
        assert len(in_envd) >= 12 + 1 + 2 and on_host == [], (in_envd, on_host)  # each episode starts one at least
        root = stack("exec", "-T", "envd", "sh", "-c", "docker info -f '{{.Driver}}' && stat -f -c %T /var/lib/docker")
        assert root.stdout.split() == ["overlay2", "ext2/ext3"], root.stdout + root.stderr  # ENVD_FS=ext4, bounded
        web = make(
            "rollout",
            EXPERIMENT="web_teacher",
            TASK_REGISTRY="configs/tasks/web",
            SUBSET="test",
            SAMPLE_SIZE=4,
            LORALOOP_API_URL=api,
        )
        web_summary = " ".join(web.stderr.split())
        assert "4/4 solved" in web_summary and "s3://loraloop/trajectories/web_teacher/" in web_summary, web_summary
        web_run = web_summary.split("web_teacher run ")[1].split()[0]
        episodes = [
            [json.loads(line) for line in store.get_bytes(key).splitlines()]
            for key in store.list(f"trajectories/web_teacher/{web_run}/")
        ]
        assert len(episodes) == 4 and len({e[0]["task_id"] for e in episodes}) == 4
        assert all(e[0]["type"] == "episode_start" and e[-1]["type"] == "episode_end" for e in episodes)
        errors = {  # an episode's failed actions, by task: what the env answered to each
            e[0]["task_id"]: [(s.get("action_text"), s["last_action_error"]) for s in e if s.get("last_action_error")]
            for e in episodes
        }
        assert all(e[-1]["success"] is True and e[-1]["error_count"] == 0 for e in episodes), errors
        assert all(any(s["type"] == "step" for s in e) for e in episodes)
        web_jobs = httpx.get(f"{api}/api/jobs/{web_run}", timeout=30).json()
        assert web_jobs["done"] == 4 and web_jobs["solved"] == 4 and web_jobs["state"] == "done"
        adapter_s = stack_syncs_a_published_adapter(tmp_path)
        rates = (
            f"CI stack: up {up_s:.0f} s, shell rollout of 12 episodes {float(jobs['episodes_per_min']):.0f} "
            f"ep/min, web rollout of 4 episodes {float(web_jobs['episodes_per_min']):.0f} ep/min, "
            f"adapter in the store to served by vLLM in {adapter_s:.0f} s"
        )
    finally:
        sizes = built_images()
        make("down", timeout=300)
    assert leftovers() == {"containers": [], "env containers": [], "networks": [], "volumes": []}
    with capsys.disabled():  # visible without -s (scripts/test.sh runs plain pytest)
        print(f"\n{rates}\nCI stack end to end: {time.monotonic() - started:.0f} s")
        print("CI stack images: " + ", ".join(f"{image} {size}" for image, size in sizes.items()))


def test_the_gateway_profile_serves_the_recording_gateway_with_the_env_files_admin_key():
    """Profile gateway: `loraloop serve gateway` on loopback :8070, sessions in the stack's Redis, episodes in MinIO,
    its admin key the env file's GATEWAY_ADMIN_KEY (`make env` writes a random one)."""
    gateway = config(FILES[0])["gateway"]
    assert gateway["profiles"] == ["gateway"] and gateway["command"][:3] == ["loraloop", "serve", "gateway"]
    env = gateway["environment"]
    written = dict(line.split("=", 1) for line in ENV_FILE.read_text().splitlines() if line.startswith("GATEWAY_"))
    assert len(written["GATEWAY_ADMIN_KEY"]) == 32 and env["LORALOOP_GATEWAY_ADMIN_KEY"] == written["GATEWAY_ADMIN_KEY"]
    assert env["LORALOOP_BROKER_URL"] == "redis://redis:6379/0" and env["LORALOOP_STORE_URL"].startswith("s3://")
    assert [(p["host_ip"], p["target"]) for p in gateway["ports"]] == [("127.0.0.1", 8070)]
