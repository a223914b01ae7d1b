"""Start and stop a local vLLM OpenAI server (the CPU build in .venv-vllm) with LoRA hot-loading on."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from loraloop.errors import ConfigError, ServiceUnavailable
from loraloop.hardware import choose_dtype
from loraloop.paths import in_project
from loraloop.settings import Settings

RUN_DIR = in_project("volumes/.run")


def _pidfile(port: int) -> Path:
    return RUN_DIR / f"vllm-{port}.pid"


def log_path(port: int) -> Path:
    """The log of the vLLM started on `port`: loraloop's start line (with the dtype), then vLLM's output."""
    return RUN_DIR / f"vllm-{port}.log"


def is_ready(url: str) -> bool:
    """True when the server answers /v1/models."""
    try:
        return httpx.get(f"{url.rstrip('/')}/models", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def port_is_free(port: int) -> bool:
    """True when nothing listens on 127.0.0.1:`port`, so that vLLM can bind it (vLLM itself would only fail
    after a 30 s start, its reason deep in its log)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def command(
    settings: Settings, model_dir: Path, served_name: str | None, port: int, dtype: str, extra_args: Sequence[str]
) -> tuple[list[str], dict[str, str]]:
    """vLLM's OpenAI server command line and environment: LoRA on with runtime loading, offline, the CPU's KV cache
    and thread binding (each overridable from the environment), and KV blocks of settings.vllm_block_size tokens so
    that a multi-turn episode's next call finds its conversation in the prefix cache."""
    python = Path(settings.vllm_python)
    env = {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": os.environ.get("VLLM_CPU_KVCACHE_SPACE", "2"),
        "HF_HUB_OFFLINE": "1",
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True",
        "VLLM_CPU_OMP_THREADS_BIND": os.environ.get("VLLM_CPU_OMP_THREADS_BIND", "auto"),
    }
    args = [
        str(python),
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model_dir),
        "--served-model-name",
        served_name or settings.base_model_name,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        dtype,
        "--max-model-len",
        "2048",
        "--enable-lora",
        "--max-lora-rank",
        str(settings.max_lora_rank),
        "--max-loras",
        str(settings.max_loras),
        "--block-size",
        str(settings.vllm_block_size),
        # No "--distributed-executor-backend uni": vLLM's CPU platform turns it into "mp" (its own process for the
        # model, pinned to VLLM_CPU_OMP_THREADS_BIND's cores) unless VLLM_ENABLE_V1_MULTIPROCESSING=0; see
        # pinned_cores for when we set that.
        *extra_args,
    ]
    if pinned_cores(env) is not None:
        env.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    return args, env


def pinned_cores(env: dict[str, str]) -> set[int] | None:
    """The cores a server bound to an explicit VLLM_CPU_OMP_THREADS_BIND list ("0", "0-1", "0,2") runs on whole, or
    None ("auto", "nobind", or VLLM_ENABLE_V1_MULTIPROCESSING set by the caller: vLLM's own mp executor).

    Why: with mp, the engine process waits for the model's process by spinning (sched_yield in vLLM's shm ring
    buffer), which on the 2-core VM cost as much CPU as the model itself: 12 agent-like replies of 32 tokens took
    45.0 CPU-s (engine 20.6, model 23.6) in 23.8 s. With the model in the engine's process
    (VLLM_ENABLE_V1_MULTIPROCESSING=0) and the whole server pinned to the bound core: 22.9 CPU-s in 22.8 s, ready
    in 18.6 s instead of 30.0 (bench/results/vllm_cpu_executor.md). Pinning is what makes it work: unpinned, the
    model's threads ran on every core and the test suite's three servers took it from 20.9 to 25.0 minutes."""
    spec = env.get("VLLM_CPU_OMP_THREADS_BIND", "auto")
    if "VLLM_ENABLE_V1_MULTIPROCESSING" in os.environ or not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", spec):
        return None
    cores: set[int] = set()
    for part in spec.split(","):
        low, _, high = part.partition("-")
        cores.update(range(int(low), int(high or low) + 1))
    return cores


def start(
    settings: Settings,
    *,
    model_dir: Path | None = None,
    served_name: str | None = None,
    port: int | None = None,
    timeout: float = 300.0,
    extra_args: Sequence[str] = (),
) -> str:
    """Start vLLM in the background (LoRA enabled, runtime loading on); return its /v1 URL when ready.

    It runs in LORALOOP_DTYPE, by default the CPU's choice (loraloop.hardware), which the log's first
    line and stderr name."""
    model_dir = Path(model_dir or settings.model_dir)
    port = port or settings.vllm_port
    url = f"http://127.0.0.1:{port}/v1"
    if is_ready(url):
        return url
    if not (model_dir / "config.json").is_file():
        raise ConfigError(
            f"no model at {model_dir}: run 'loraloop models prepare smollm2-135m --out {model_dir}' (or gemma3-270m)"
        )
    python = Path(settings.vllm_python)
    if not python.exists():
        raise ConfigError(f"vLLM interpreter {python} not found: run 'make setup' (creates .venv-vllm)")
    if not port_is_free(port):
        raise ConfigError(
            f"port {port} is taken by a process that is not a vLLM answering {url}/models: stop it "
            f"(see 'ss -ltnp sport = :{port}') or run on another port (LORALOOP_VLLM_PORT=<port>)"
        )
    RUN_DIR.mkdir(parents=True, exist_ok=True)
    log = log_path(port)
    dtype = choose_dtype(settings.dtype)
    args, env = command(settings, model_dir, served_name, port, dtype, extra_args)
    line = f"loraloop: starting vLLM on port {port} with --dtype {dtype} (LORALOOP_DTYPE={settings.dtype})"
    print(line, file=sys.stderr)
    with open(log, "ab") as out:
        out.write(f"{line}\n".encode())
        out.flush()
        cores = pinned_cores(env)
        proc = subprocess.Popen(
            args,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=(lambda: os.sched_setaffinity(0, cores)) if cores is not None else None,
        )
    _pidfile(port).write_text(str(proc.pid))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").splitlines()[-15:]
            raise ServiceUnavailable(f"vLLM exited with {proc.returncode} (log {log}):\n" + "\n".join(tail))
        if is_ready(url):
            return url
        time.sleep(1)
    stop(port)
    raise ServiceUnavailable(f"vLLM did not answer at {url} within {timeout:.0f} s (log {log})")


def stop(port: int) -> bool:
    """Stop the vLLM this project started on `port`; False when none was running."""
    pidfile = _pidfile(port)
    if not pidfile.exists():
        return False
    pid = int(pidfile.read_text())
    pidfile.unlink()
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    for _ in range(100):
        if _gone(pid):
            return True
        time.sleep(0.1)
    os.killpg(pid, signal.SIGKILL)
    return True


def _gone(pid: int) -> bool:
    """True once the process has exited; a child of this process is reaped (a zombie still answers kill 0)."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0]:
            return True
    except ChildProcessError:  # not our child: its parent reaps it
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False
