"""Rollout benchmark: the scripted teacher driven directly vs through the rollout service.

    .venv/bin/python bench/rollout.py [--episodes N] [--out [PATH]]

Needs a Docker engine with loraloop/os-env:latest and `redis-server` on PATH; no model. The job is
fixed: experiment `teacher` on the train split of configs/tasks/os (seed 42, task seed 123).

- direct: ShellEnv + ScriptedTeacher + build_messages in this process, one episode after another,
  nothing stored: what an episode costs without the service.
- service: a private redis-server, a file:// store in a temporary folder, `loraloop worker`
  processes (1 x 1 thread, 2 x 1, 2 x 2), the job submitted with `loraloop rollout` (its wall time
  includes starting that client). Every episode must be stored and solve exactly the tasks the
  direct run solved, otherwise the script exits 1.

Timings are only comparable on an otherwise idle machine: other rollouts, tests or training on the
same CPUs or Docker engine slow some rows more than others.
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from loraloop.envs.shell.teacher import ScriptedTeacher
from loraloop.agents.prompts import build_messages
from loraloop.envs.shell.env import ShellEnv
from loraloop.errors import LoraloopError
from loraloop.rollout.experiments import get_experiment
from loraloop.rollout.sampler import EpisodeSpec, plan_rollout
from loraloop.settings import Settings
from loraloop.store import FileStore
from loraloop.store.trajectories import iter_episodes
from loraloop.tasks.registry import Registry, load_registry
from loraloop.tasks.shell.format import ShellTask
from results import add_out, free_port, report

ROOT = Path(__file__).resolve().parents[1]
LORALOOP = [sys.executable, "-m", "loraloop.cli"]
REGISTRY, SUBSET, EXPERIMENT, SEED, TASK_SEED = "configs/tasks/os", "train", "teacher", 42, 123
SERVICE_CONFIGS = [(1, 1), (2, 1), (2, 2)]  # (worker processes, threads per worker)

Outcomes = dict[tuple[str, int], bool]  # (task_id, attempt) -> solved


@dataclass
class Row:
    """One measured configuration of the job."""

    name: str
    processes: int
    threads: int
    episodes: int
    stored: int | None
    solved: int
    wall_s: float

    @property
    def s_per_episode(self) -> float:
        """Wall seconds divided by the episodes of the job."""
        return self.wall_s / self.episodes

    @property
    def per_minute(self) -> float:
        """Episodes per minute of wall time: the throughput scaling is judged on."""
        return 60.0 * self.episodes / self.wall_s


def job(registry: Registry, episodes: int) -> tuple[list[EpisodeSpec], list[str]]:
    """The fixed job as planned specs plus the `loraloop rollout` flags that plan the same episodes.

    N episodes = min(N, train tasks) tasks x enough attempts each (rounded up to whole attempts).
    """
    sample = min(episodes, len(registry.select(SUBSET)))
    attempts = math.ceil(episodes / sample)
    specs = plan_rollout(registry, REGISTRY, get_experiment(Settings().experiments_path, EXPERIMENT), run_id="direct",
                         subset=SUBSET, sample_size=sample, rollouts_per_task=attempts, seed=SEED,
                         task_seed=TASK_SEED, temperature=None)
    flags = ["--experiment", EXPERIMENT, "--task_registry", REGISTRY, "--subset", SUBSET, "--sample_size",
             str(sample), "--rollouts_per_task", str(attempts), "--seed", str(SEED), "--task_seed", str(TASK_SEED)]
    return specs, flags


def play_direct(task: ShellTask, max_steps: int, settings: Settings) -> bool:
    """Play one episode with the env and the teacher only (no Celery, no store); True when solved."""
    policy = ScriptedTeacher(task)
    with ShellEnv(task, settings, max_rounds=max_steps) as env:
        first, _ = env.reset()
        turns: list[tuple[str, str]] = []
        while True:
            reply = policy.act(build_messages(env.instructions, env.examples, first, turns,
                                              settings.prompt_char_budget))
            result = env.step(reply.text)
            if result.done:
                return bool(result.info.get("success"))
            turns.append((reply.text, result.observation))


def run_direct(registry: Registry, specs: list[EpisodeSpec]) -> tuple[Row, Outcomes]:
    """The baseline: every episode in this process, one after another."""
    settings = Settings()
    started = time.perf_counter()
    outcomes = {(s.task_id, s.attempt): play_direct(registry.get(s.task_id), s.max_steps, settings) for s in specs}
    wall = time.perf_counter() - started
    return Row("direct (ShellEnv, no Celery, no store)", 1, 1, len(specs), None, sum(outcomes.values()), wall), outcomes


def start_redis(port: int) -> subprocess.Popen:
    """A throwaway redis-server on 127.0.0.1 (no persistence); returns once it accepts connections."""
    server = shutil.which("redis-server")
    if server is None:
        raise LoraloopError("redis-server not found: install it (e.g. 'apt-get install -y redis-server')")
    proc = subprocess.Popen([server, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return proc
        time.sleep(0.1)
    proc.terminate()
    raise LoraloopError(f"redis-server did not listen on 127.0.0.1:{port} within 30 s")


def start_workers(processes: int, threads: int, env: dict[str, str], logs: Path,
                  workers: list[subprocess.Popen]) -> None:
    """Start `loraloop worker` processes into `workers` (so the caller can stop even a partial start)
    and wait until each logs that it is ready; the wait is not part of the measured time."""
    for i in range(processes):
        log = logs / f"worker-{processes}x{threads}-{i}.log"
        with open(log, "wb") as handle:
            workers.append(subprocess.Popen(LORALOOP + ["worker", "--concurrency", str(threads), "--loglevel", "info"],
                                            env=env, stdout=handle, stderr=subprocess.STDOUT))
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


def stored_outcomes(store: Path, run_id: str) -> tuple[int, Outcomes, list[str]]:
    """The .jsonl files a run left in the store, their outcomes, and any unreadable ones."""
    files = len(list((store / "trajectories" / EXPERIMENT / run_id).glob("*.jsonl")))
    malformed: list[str] = []
    outcomes = {(e.start.task_id, e.start.attempt_idx): e.success
                for e in iter_episodes(FileStore(store), f"trajectories/{EXPERIMENT}/{run_id}", malformed)}
    return files, outcomes, malformed


def run_service(processes: int, threads: int, flags: list[str], env: dict[str, str], store: Path,
                expected: Outcomes, problems: list[str]) -> Row:
    """Start the workers, time `loraloop rollout` over the broker, then check what was stored."""
    run_id = f"bench-{processes}x{threads}"
    timeout = 120 + 30 * len(expected)
    workers: list[subprocess.Popen] = []
    try:
        start_workers(processes, threads, env, store.parent, workers)
        started = time.perf_counter()
        proc = subprocess.run(LORALOOP + ["rollout", *flags, "--run_id", run_id], env=env,
                              capture_output=True, text=True, timeout=timeout)
        wall = time.perf_counter() - started
    except subprocess.TimeoutExpired:
        problems.append(f"{run_id}: loraloop rollout did not finish within {timeout} s")
        wall = float(timeout)
    else:
        if proc.returncode != 0:
            problems.append(f"{run_id}: loraloop rollout exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    finally:
        stop(workers)
    files, outcomes, malformed = stored_outcomes(store, run_id)
    if files != len(expected) or malformed:
        problems.append(f"{run_id}: {files} of {len(expected)} episodes stored, malformed: {malformed}")
    mismatched = sorted(k for k in expected if outcomes.get(k) != expected[k])
    if mismatched:
        problems.append(f"{run_id}: outcomes differ from the direct run for {mismatched}")
    return Row("service (loraloop worker + rollout)", processes, threads, len(expected), files,
               sum(outcomes.values()), wall)


def markdown(rows: list[Row], episodes: int) -> str:
    """The results as a Markdown table plus the scaling and overhead ratios."""
    direct, one = rows[0], rows[1]
    lines = [f"## Rollout benchmark: `{EXPERIMENT}`, {SUBSET} split of {REGISTRY}, {episodes} episodes",
             "",
             f"{os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
             "",
             "| configuration | processes x threads | stored | solved | wall s | s / episode | episodes / min |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        stored = "-" if r.stored is None else f"{r.stored}/{r.episodes}"
        lines.append(f"| {r.name} | {r.processes} x {r.threads} | {stored} | {r.solved}/{r.episodes} | "
                     f"{r.wall_s:.1f} | {r.s_per_episode:.2f} | {r.per_minute:.1f} |")
    overhead = one.s_per_episode - direct.s_per_episode
    lines += ["",
              *(f"- scaling, {r.processes} x {r.threads} vs 1 x 1: {r.per_minute / one.per_minute:.2f}x "
                "episodes / min" for r in rows[2:]),
              f"- service overhead per episode (1 x 1 minus direct): {overhead:+.2f} s "
              f"({one.s_per_episode / direct.s_per_episode:.2f}x direct; includes starting `loraloop rollout`)",
              ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the baseline and every service configuration; print the table; 1 when a check failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=40, help="episodes per configuration (default 40)")
    add_out(parser, "rollout")
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error("--episodes must be at least 1")
    out = args.out.resolve() if args.out else None
    os.chdir(ROOT)  # the registry and experiments paths are relative, for workers too
    registry = load_registry(REGISTRY)
    specs, flags = job(registry, args.episodes)
    print(f"direct: {len(specs)} episodes ...", file=sys.stderr)
    direct, expected = run_direct(registry, specs)
    rows, problems = [direct], []
    tmp = Path(tempfile.mkdtemp(prefix="loraloop-bench-"))
    redis = None
    try:
        port = free_port()
        redis = start_redis(port)
        store = tmp / "store"
        # No API URL: `loraloop rollout` must submit straight to this broker.
        env = {**os.environ, "LORALOOP_BROKER_URL": f"redis://127.0.0.1:{port}/0",
               "LORALOOP_STORE_URL": f"file://{store}", "LORALOOP_API_URL": ""}
        for processes, threads in SERVICE_CONFIGS:
            print(f"service: {processes} worker(s) x {threads} thread(s) ...", file=sys.stderr)
            rows.append(run_service(processes, threads, flags, env, store, expected, problems))
    finally:
        if redis is not None:
            stop([redis])
        shutil.rmtree(tmp, ignore_errors=True)
    report(markdown(rows, len(specs)), out)
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except LoraloopError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
