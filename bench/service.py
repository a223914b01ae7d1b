"""What the service benches share (bench/rollout.py, bench/load.py): the scripted teacher's job on the train
split of configs/tasks/os, and a private rollout service to run it on: a throwaway redis-server, a file://
store in a temporary folder and `loraloop worker` processes.

The benches run as scripts (`python bench/NAME.py`), so they import this module as `service`.
"""

from __future__ import annotations

import math
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from results import free_port

from loraloop.errors import LoraloopError
from loraloop.rollout.experiments import get_experiment
from loraloop.rollout.sampler import EpisodeSpec, plan_rollout
from loraloop.settings import Settings
from loraloop.task_registry import Registry

LORALOOP = [sys.executable, "-m", "loraloop.cli"]
REGISTRY, SUBSET, EXPERIMENT, SEED, TASK_SEED = "configs/tasks/os", "train", "teacher", 42, 123


def job(registry: Registry, episodes: int) -> tuple[list[EpisodeSpec], list[str]]:
    """The fixed job as planned specs plus the `loraloop rollout` flags that plan the same episodes.

    N episodes = as few attempts per task as the train split's tasks allow, over as few tasks as make N
    with them: N exactly when that divides evenly, else rounded up (2,000 = 80 of the 83 tasks x 25).
    """
    attempts = math.ceil(episodes / len(registry.select(SUBSET)))
    sample = math.ceil(episodes / attempts)
    specs = plan_rollout(
        registry,
        REGISTRY,
        get_experiment(Settings().experiments_path, EXPERIMENT),
        run_id="direct",
        subset=SUBSET,
        sample_size=sample,
        rollouts_per_task=attempts,
        seed=SEED,
        task_seed=TASK_SEED,
        temperature=None,
    )
    flags = [
        "--experiment",
        EXPERIMENT,
        "--task_registry",
        REGISTRY,
        "--subset",
        SUBSET,
        "--sample_size",
        str(sample),
        "--rollouts_per_task",
        str(attempts),
        "--seed",
        str(SEED),
        "--task_seed",
        str(TASK_SEED),
    ]
    return specs, flags


def start_redis(port: int) -> subprocess.Popen:
    """A throwaway redis-server on 127.0.0.1 (no persistence); returns once it accepts connections."""
    server = shutil.which("redis-server")
    if server is None:
        raise LoraloopError("redis-server not found: install it (e.g. 'apt-get install -y redis-server')")
    proc = subprocess.Popen(
        [server, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.1)
    proc.terminate()
    raise LoraloopError(f"redis-server did not listen on 127.0.0.1:{port} within 30 s")


@contextmanager
def private_service(**settings: str) -> Iterator[tuple[dict[str, str], Path]]:
    """A redis-server and a file:// store in a temporary folder, both gone afterwards; yields the environment
    for `loraloop worker` and `loraloop rollout` (plus `settings` as LORALOOP_<NAME> variables) and the store.

    No API URL in it: `loraloop rollout` submits straight to this broker.
    """
    tmp = Path(tempfile.mkdtemp(prefix="loraloop-bench-"))
    redis = None
    try:
        port = free_port()
        redis = start_redis(port)
        store = tmp / "store"
        env = {
            **os.environ,
            "LORALOOP_BROKER_URL": f"redis://127.0.0.1:{port}/0",
            "LORALOOP_STORE_URL": f"file://{store}",
            "LORALOOP_API_URL": "",
            **{f"LORALOOP_{name.upper()}": value for name, value in settings.items()},
        }
        yield env, store
    finally:
        if redis is not None:
            stop([redis])
        shutil.rmtree(tmp, ignore_errors=True)


def start_workers(
    processes: int, threads: int, env: dict[str, str], logs: Path, workers: list[subprocess.Popen]
) -> None:
    """Start `loraloop worker` processes into `workers` (so the caller can stop even a partial start)
    and wait until each logs that it is ready; the wait is not part of the measured time."""
    for i in range(processes):
        log = logs / f"worker-{processes}x{threads}-{i}.log"
        with open(log, "wb") as handle:
            workers.append(
                subprocess.Popen(
                    LORALOOP + ["worker", "--concurrency", str(threads), "--loglevel", "info"],
                    env=env,
                    stdout=handle,
                    stderr=subprocess.STDOUT,
                )
            )
        deadline = time.monotonic() + 60
        while " ready." not in log.read_text(errors="replace"):
            if workers[-1].poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-1500:]
                raise LoraloopError(f"worker {i} of {processes}x{threads} did not start (log {log}):\n{tail}")
            time.sleep(0.2)


def stop(procs: list[subprocess.Popen]) -> None:
    """Terminate the processes this script started, killing any that ignore it for 30 s."""
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
