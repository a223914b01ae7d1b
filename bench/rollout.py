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
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from results import add_out, machine, report
from service import EXPERIMENT, LORALOOP, REGISTRY, SUBSET, job, private_service, start_workers, stop

from loraloop.envs.shell.env import ShellEnv
from loraloop.envs.shell.teacher import ScriptedTeacher
from loraloop.errors import LoraloopError
from loraloop.kinds.prompts import build_messages
from loraloop.rollout.sampler import EpisodeSpec
from loraloop.settings import Settings
from loraloop.store import FileStore
from loraloop.store.trajectories import iter_episodes
from loraloop.task_registry import Registry, load_registry
from loraloop.tasks.shell.format import ShellTask

ROOT = Path(__file__).resolve().parents[1]
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


def play_direct(task: ShellTask, max_steps: int, settings: Settings) -> bool:
    """Play one episode with the env and the teacher only (no Celery, no store); True when solved."""
    policy = ScriptedTeacher(task)
    with ShellEnv(task, settings, max_rounds=max_steps) as env:
        first, _ = env.reset()
        turns: list[tuple[str, str]] = []
        while True:
            reply = policy.act(
                build_messages(env.instructions, env.examples, first, turns, settings.prompt_char_budget)
            )
            result = env.step(reply.text)
            if result.done:
                return bool(result.info.success)
            turns.append((reply.text, result.observation))


def run_direct(registry: Registry, specs: list[EpisodeSpec]) -> tuple[Row, Outcomes]:
    """The baseline: every episode in this process, one after another."""
    settings = Settings()
    started = time.perf_counter()
    outcomes = {(s.task_id, s.attempt): play_direct(registry.get(s.task_id), s.max_steps, settings) for s in specs}
    wall = time.perf_counter() - started
    return Row("direct (ShellEnv, no Celery, no store)", 1, 1, len(specs), None, sum(outcomes.values()), wall), outcomes


def stored_outcomes(store: Path, run_id: str) -> tuple[int, Outcomes, list[str]]:
    """The .jsonl files a run left in the store, their outcomes, and any unreadable ones."""
    files = len(list((store / "trajectories" / EXPERIMENT / run_id).glob("*.jsonl")))
    malformed: list[str] = []
    outcomes = {
        (e.start.task_id, e.start.attempt_idx): e.success
        for e in iter_episodes(FileStore(store), f"trajectories/{EXPERIMENT}/{run_id}", malformed)
    }
    return files, outcomes, malformed


def run_service(
    processes: int,
    threads: int,
    flags: list[str],
    env: dict[str, str],
    store: Path,
    expected: Outcomes,
    problems: list[str],
) -> Row:
    """Start the workers, time `loraloop rollout` over the broker, then check what was stored."""
    run_id = f"bench-{processes}x{threads}"
    timeout = 120 + 30 * len(expected)
    workers: list[subprocess.Popen] = []
    try:
        start_workers(processes, threads, env, store.parent, workers)
        started = time.perf_counter()
        proc = subprocess.run(
            LORALOOP + ["rollout", *flags, "--run_id", run_id], env=env, capture_output=True, text=True, timeout=timeout
        )
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
    return Row(
        "service (loraloop worker + rollout)", processes, threads, len(expected), files, sum(outcomes.values()), wall
    )


def markdown(rows: list[Row], episodes: int) -> str:
    """The results as a Markdown table plus the scaling and overhead ratios."""
    direct, one = rows[0], rows[1]
    lines = [
        f"## Rollout benchmark: `{EXPERIMENT}`, {SUBSET} split of {REGISTRY}, {episodes} episodes",
        "",
        f"{machine()}.",
        "",
        "| configuration | processes x threads | stored | solved | wall s | s / episode | episodes / min |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        stored = "-" if r.stored is None else f"{r.stored}/{r.episodes}"
        lines.append(
            f"| {r.name} | {r.processes} x {r.threads} | {stored} | {r.solved}/{r.episodes} | "
            f"{r.wall_s:.1f} | {r.s_per_episode:.2f} | {r.per_minute:.1f} |"
        )
    overhead = one.s_per_episode - direct.s_per_episode
    lines += [
        "",
        *(
            f"- scaling, {r.processes} x {r.threads} vs 1 x 1: {r.per_minute / one.per_minute:.2f}x episodes / min"
            for r in rows[2:]
        ),
        f"- service overhead per episode (1 x 1 minus direct): {overhead:+.2f} s "
        f"({one.s_per_episode / direct.s_per_episode:.2f}x direct; includes starting `loraloop rollout`)",
        "",
    ]
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
    with private_service() as (env, store):
        for processes, threads in SERVICE_CONFIGS:
            print(f"service: {processes} worker(s) x {threads} thread(s) ...", file=sys.stderr)
            rows.append(run_service(processes, threads, flags, env, store, expected, problems))
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
