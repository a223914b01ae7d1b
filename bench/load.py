"""Load benchmark: 2,000 scripted episodes on 2 workers; every trajectory stored once, worker memory flat.

    .venv/bin/python bench/load.py [--episodes 2000] [--workers 2] [--concurrency 2] [--warmup N] [--out [PATH]]

Needs a Docker engine with the shell environment images (`make images`) and `redis-server` on PATH; no
model. The job: experiment `teacher` (the scripted expert, one or two steps an episode) on the train split
of configs/tasks/os, 2,000 episodes = 80 of its 83 tasks x 25 attempts (seed 42, task seed 123), run by
a private redis-server, a file:// store in a temporary folder and --workers `loraloop worker` processes
of --concurrency threads each, submitted with `loraloop rollout` (wall time from its start to its exit).

- Memory: the resident set (VmRSS) of each worker process, sampled every second. A worker runs its
  episodes in a thread pool, so that one process holds them all; the short-lived `docker` CLI processes
  it starts are not counted. Start = the first sample once --warmup episodes are done (default 5% of
  the job: 100 of 2,000), end = after the job has ended, before the workers stop; max = the highest
  sample from start on. Flat (the target): end <= start x 1.10 + 5 MiB for every worker.
- Completion: the store checked against the run's plan as `loraloop store verify --run` does it (no
  episode missing, none stored twice, none corrupt), no child process of a worker left once the job
  has ended (each episode's shell is a `docker exec` child), and no environment container left once the
  workers have stopped (they carry a label of this run's own, loraloop.project=loraloop-load-<pid>).

Prints a Markdown table and PASS or MISSED; with --out also writes it (bench/results/load.md) and a plot of
RSS over time beside it (load.png). Exits 1 when a check fails or the target is missed. Figures are only
comparable on an otherwise idle machine.
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

from loraloop.charts import chart
from loraloop.envs.shell.docker import PROJECT_LABEL
from loraloop.errors import LoraloopError
from loraloop.service.book import JobBook, UnknownJob, job_book
from loraloop.service.models import JobStatus
from loraloop.service.progress import progress_bar
from loraloop.store import FileStore
from loraloop.store.integrity import RunCheck, verify_run
from loraloop.store.integrity import report as check_report
from loraloop.task_registry import load_registry

ROOT = Path(__file__).resolve().parents[1]
RUN_ID = "bench-load"
RATIO, SLACK_MIB = 1.10, 5.0  # flat: end <= start x RATIO + SLACK_MIB
STALL_S = 300  # no episode ended for this long: the job is stuck


@dataclass
class Sample:
    """One reading while the job runs: seconds since it was submitted, episodes done, each worker's RSS."""

    t: float
    done: int
    rss: list[float]  # MiB, one per worker


@dataclass
class Memory:
    """One worker's RSS at the start (after warm-up), at the end and its highest from the start on."""

    start: float
    end: float
    peak: float

    @property
    def ratio(self) -> float:
        """End over start."""
        return self.end / self.start

    @property
    def flat(self) -> bool:
        """The target: the end within 10% (and a few MiB of noise) of the start."""
        return self.end <= self.start * RATIO + SLACK_MIB


def rss_mib(pid: int) -> float:
    """The resident set of one process in MiB (VmRSS in /proc): what the worker holds in memory now."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError as exc:
        raise LoraloopError(f"worker process {pid} is gone: cannot read its memory") from exc
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise LoraloopError(f"/proc/{pid}/status has no VmRSS line")


def children(pid: int) -> list[str]:
    """The command lines of a process's live children (from /proc/*/stat): after the job, any left is a leaked
    `docker exec` of an episode's shell."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and int((proc / "stat").read_text().rpartition(")")[2].split()[1]) == pid:
                command = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
                found.append(command or f"pid {proc.name} (ended, not reaped)")
        except (FileNotFoundError, ProcessLookupError):  # it ended and was reaped while /proc was read
            continue
    return found


def containers(project: str) -> list[str]:
    """The ids of environment containers, running or not, that carry this run's project label."""
    proc = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label={PROJECT_LABEL}={project}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if proc.returncode != 0:
        raise LoraloopError(f"docker ps failed: {proc.stderr.strip()}")
    return proc.stdout.split()


def exited(proc: subprocess.Popen, timeout: float) -> bool:
    """Wait up to `timeout` seconds for the process; True once it has exited (so its end is seen at once)."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return False
    return True


def status_of(book: JobBook, run_id: str) -> JobStatus | None:
    """The job's status in the book, or None while `loraloop rollout` has not submitted it yet."""
    try:
        return book.status(run_id)
    except UnknownJob:
        return None


def run_job(
    flags: list[str], env: dict[str, str], workers: list[subprocess.Popen], log: Path, problems: list[str]
) -> tuple[float, JobStatus | None, list[Sample]]:
    """Run `loraloop rollout` to its end while sampling progress and worker RSS every second, with a bar.

    Returns the wall seconds, the job's last status and the samples, the last one taken after the job ended.
    A client that fails, or a job with no episode ended in STALL_S, is added to `problems`.
    """
    book = job_book(env["LORALOOP_BROKER_URL"])
    samples: list[Sample] = []
    status = None
    with open(log, "wb") as handle, progress_bar(quiet=False) as progress:
        bar = progress.add_task("starting", total=None, solved=0, failed=0, rate="-", epm=0.0)
        started = time.perf_counter()
        client = subprocess.Popen(
            LORALOOP + ["rollout", *flags, "--run_id", RUN_ID], env=env, stdout=handle, stderr=subprocess.STDOUT
        )
        try:
            moved = 0.0  # seconds in when the last episode ended
            while True:
                ended = exited(client, 1.0)
                wall = time.perf_counter() - started
                status = status_of(book, RUN_ID) or status
                done = status.done if status else 0
                if samples and done > samples[-1].done:
                    moved = wall
                samples.append(Sample(wall, done, [rss_mib(w.pid) for w in workers]))
                if status:
                    rate = "-" if status.success_rate is None else f"{status.success_rate:.0%}"
                    progress.update(
                        bar,
                        completed=done,
                        total=status.total,
                        solved=status.solved,
                        failed=status.failed,
                        rate=rate,
                        epm=status.episodes_per_min,
                        description="RSS MiB " + " · ".join(f"{r:.0f}" for r in samples[-1].rss),
                    )
                if ended:
                    break
                if wall - moved > STALL_S:
                    problems.append(f"no episode ended in {STALL_S} s (at {done} done): stopped `loraloop rollout`")
                    break
        finally:
            stop([client])
    if client.returncode != 0 and not problems:
        problems.append(f"loraloop rollout exited {client.returncode}: {log.read_text(errors='replace')[-800:]}")
    return wall, status, samples


def memory(samples: list[Sample], warmup: int, worker: int) -> Memory:
    """A worker's RSS at the first sample with `warmup` episodes done, at the last sample, and its peak between."""
    after = [s for s in samples if s.done >= warmup] or samples[-1:]
    return Memory(after[0].rss[worker], after[-1].rss[worker], max(s.rss[worker] for s in after))


def plot(samples: list[Sample], warmup_t: float, path: Path) -> None:
    """RSS of each worker over the run, with the warm-up's end marked: a leak shows as a rising line."""
    with chart(path, f"Worker memory over {samples[-1].done} episodes", "RSS (MiB)", size=(8, 4)) as ax:
        for i in range(len(samples[0].rss)):
            ax.plot([s.t for s in samples], [s.rss[i] for s in samples], label=f"worker {i}")
        ax.axvline(warmup_t, color="grey", linestyle="--", label="start (after warm-up)")
        ax.set_xlabel("seconds since the job was submitted")
        ax.set_ylim(0, 1.25 * max(max(s.rss) for s in samples))
        ax.legend()


def incomplete(check: RunCheck, planned: int, left: list[str], stray: list[list[str]]) -> list[str]:
    """What keeps the job from being complete: a plan of another size than the job's, episodes missing,
    stored twice or corrupt against it, environment containers left, worker child processes left."""
    found = [] if check.planned == planned else [f"the run's plan holds {check.planned} episodes, the job {planned}"]
    found += [] if check.ok else [check_report(check)]
    found += [f"{len(left)} environment containers left after the workers stopped: {' '.join(left)}"] if left else []
    found += [
        f"worker {i} still had {len(procs)} child processes after the job: {procs}"
        for i, procs in enumerate(stray)
        if procs
    ]
    return found


def markdown(
    args: argparse.Namespace,
    planned: int,
    wall: float,
    status: JobStatus | None,
    check: RunCheck,
    mems: list[Memory],
    left: list[str],
    stray: list[list[str]],
    complete: bool,
) -> str:
    """The results as Markdown: the job, its completeness and each worker's memory, with the verdicts."""
    done = status.done if status else 0
    solved = f"{status.solved}, failed {status.failed}" if status else "-"
    lines = [
        f"## Load benchmark: `{EXPERIMENT}`, {SUBSET} split of {REGISTRY}, {planned} episodes, "
        f"{args.workers} workers x {args.concurrency} threads",
        "",
        f"{machine()}. RSS start: once {args.warmup} episodes were done.",
        "",
        "| episodes | wall s | episodes / min | solved | stored | missing | duplicate | corrupt | containers left |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|",
        f"| {done}/{planned} | {wall:.1f} | {60 * done / wall:.1f} | {solved} | {check.stored} | "
        f"{len(check.missing)} | {len(check.duplicates)} | {len(check.corrupt)} | {len(left)} |",
        "",
        "| worker | RSS start MiB | RSS end MiB | RSS max MiB | end / start | flat | child processes left |",
        "|---:|---:|---:|---:|---:|---|---:|",
    ]
    lines += [
        f"| {i} | {m.start:.1f} | {m.end:.1f} | {m.peak:.1f} | {m.ratio:.3f} | {'yes' if m.flat else 'no'} | "
        f"{len(procs)} |"
        for i, (m, procs) in enumerate(zip(mems, stray))
    ]
    flat = all(m.flat for m in mems)
    lines += [
        "",
        "- every planned episode stored exactly once, no container or process left: "
        f"{'PASS' if complete else 'MISSED'}",
        f"- worker RSS flat (end <= start x {RATIO:.2f} + {SLACK_MIB:.0f} MiB): {'PASS' if flat else 'MISSED'}",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the job, check the store and the containers, print the table; 1 when a check or the target fails."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=2000, help="episodes in the job (default 2000)")
    parser.add_argument("--workers", type=int, default=2, help="`loraloop worker` processes (default 2)")
    parser.add_argument("--concurrency", type=int, default=2, help="threads (episodes at once) per worker (default 2)")
    parser.add_argument(
        "--warmup",
        type=int,
        default=None,
        help="episodes done before the RSS start is taken (default: 5%% of --episodes)",
    )
    add_out(parser, "load")
    args = parser.parse_args(argv)
    if min(args.episodes, args.workers, args.concurrency) < 1:
        parser.error("--episodes, --workers and --concurrency must be at least 1")
    args.warmup = args.episodes // 20 if args.warmup is None else args.warmup
    if not 0 <= args.warmup < args.episodes:
        parser.error("--warmup must be at least 0 and less than --episodes")
    out = args.out.resolve() if args.out else None
    os.chdir(ROOT)  # the registry and experiments paths are relative, for workers too
    specs, flags = job(load_registry(REGISTRY), args.episodes)
    project = f"loraloop-load-{os.getpid()}"
    problems: list[str] = []
    with private_service(project=project) as (env, store):
        workers: list[subprocess.Popen] = []
        try:
            start_workers(args.workers, args.concurrency, env, store.parent, workers)
            wall, status, samples = run_job(flags, env, workers, store.parent / "rollout.log", problems)
            stray = [children(w.pid) for w in workers]
        finally:
            stop(workers)
        left = containers(project)
        check = verify_run(FileStore(store), RUN_ID, EXPERIMENT)
    mems = [memory(samples, args.warmup, i) for i in range(args.workers)]
    missing = incomplete(check, len(specs), left, stray)
    report(markdown(args, len(specs), wall, status, check, mems, left, stray, not missing), out)
    problems += missing
    if out is not None:
        warmed = next((s.t for s in samples if s.done >= args.warmup), samples[-1].t)
        plot(samples, warmed, out.with_suffix(".png"))
        print(f"plot: {out.with_suffix('.png')}", file=sys.stderr)
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    return 1 if problems or not all(m.flat for m in mems) else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except LoraloopError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
