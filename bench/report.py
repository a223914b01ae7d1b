"""Report and viewer bench: the time to build the reports and to open the trajectory viewer's pages over large runs.

    .venv/bin/python bench/report.py [--episodes 1000,10000] [--repeat 5] [--out]

For each size N: a private service (bench/service.py: a throwaway redis-server and a file:// store in a temporary
folder) gets an evaluation of two modes on the same tasks, N episodes each (2N in the store), written in the real
record format (EpisodeRecorder, typed records) with 1 to 8 steps, some environment errors and five task
families: the base model, and an adapter version published in the store (so `loraloop report` places it). Then,
each timed --repeat times (median and slowest):
- the run index: both runs' index objects built from their episodes (what a job does when it ends);
- the eval report: `write_report` over both modes (table, paired test, CSV, three charts), from the indexes;
- the loop report: `write_iteration_report` over the run (what `loraloop report --runs` writes);
- the viewer, served for real (`loraloop serve rollout-api`, over HTTP): the runs page, a run's first page, its
  last page, the run filtered by outcome and task, one episode; and a run's first page after each of `--repeat`
  episodes more (a run still being played: its index is read again from every episode).
Target (issue #14): every report and page view under 1 s at 10,000 episodes a run (the slowest of the repeats).
Matplotlib's import, paid once per process, is timed apart. Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
from results import add_out, free_port, machine, report, timed
from service import LORALOOP, private_service, stop

from loraloop.evaluate.iterations import select_runs, write_iteration_report
from loraloop.evaluate.report import write_report
from loraloop.service.api.routes.ui import PAGE
from loraloop.store import adapters
from loraloop.store.backends import FileStore
from loraloop.store.browse import index_key, run_index
from loraloop.store.records import Adapter, EpisodeEnd, EpisodeStart, Step
from loraloop.store.trajectories import EpisodeRecorder

TARGET_S = 1.0
RUN, ATTEMPTS, ADAPTER = "bench-eval", 4, "bench_lora"
FAMILIES = ("count-ext", "grep-count", "config-value", "find-size", "web-shop")


def publish_adapter(store: FileStore, folder: Path) -> str:
    """A version of ADAPTER in the store (the files a PEFT adapter holds, trained by 'bc'); its served name."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adapter_config.json").write_text(json.dumps({"r": 8}))
    (folder / "adapter_model.safetensors").write_bytes(b"\0" * 1024)
    version = adapters.upload(store, ADAPTER, folder, {"training_metrics": {"algorithm": "bc"}})
    return adapters.served_name(ADAPTER, version)


def write_episodes(
    store: FileStore, mode: str, episodes: int, model: str, adapter: Adapter | None, solve: int, only_task: str = ""
) -> None:
    """`episodes` episodes of `mode` in RUN: N/ATTEMPTS test tasks x ATTEMPTS attempts (or attempts of `only_task`),
    one in `solve` solved, one in 37 an environment error, 1 to 8 steps of shell-sized observations and replies."""
    for n in range(episodes):
        task, attempt = only_task or f"test-{FAMILIES[n % len(FAMILIES)]}-{n // ATTEMPTS:05d}", n % ATTEMPTS
        success, error = n % solve == 0, "container died" if n % 37 == 5 else None
        rec = EpisodeRecorder(store, mode, RUN, task, attempt)
        rec.add(
            EpisodeStart(
                task_id=task,
                mode=mode,
                run_id=RUN,
                attempt_idx=attempt,
                split="test",
                policy="openai",
                category=FAMILIES[n % len(FAMILIES)],
                worker_model=model,
                adapter=adapter,
                first_observation=f"Task: count the files in /root/{task}",
                expected="3",
            )
        )
        steps = 1 + n % 8
        for i in range(steps):
            rec.add(
                Step(
                    step_idx=i,
                    observation=f"The output of the OS:\n\n{'x' * 300}{i}",
                    model=model,
                    raw_output=f"Think: step {i}.\n\nAct: bash\n\n```bash\nls /root/{task} | wc -l\n```",
                    action="bash",
                    action_text=f"bash: ls /root/{task} | wc -l",
                    action_source="worker",
                    reward=float(success and i == steps - 1),
                )
            )
        rec.add(
            EpisodeEnd(
                success=success,
                reward=float(success),
                total_steps=steps,
                error=error,
                status="env_error" if error else "completed",
                answer="3" if success else "4",
            )
        )
        rec.flush()


def repeated(fn, repeat: int) -> list[float]:
    """Seconds of `repeat` calls of fn."""
    return [timed(fn)[1] for _ in range(repeat)]


def start_api(env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """`loraloop serve rollout-api` on a free port with this environment; returns once /ui answers."""
    port = free_port()
    api = subprocess.Popen(
        LORALOOP + ["serve", "rollout-api", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"{url}/ui", timeout=5).status_code == 200:
                return api, url
        except httpx.TransportError:
            pass
        if api.poll() is not None or time.monotonic() > deadline:
            stop([api])
            raise SystemExit(f"the rollout API did not answer on {url}: {api.stderr.read()[-2000:]}")
        time.sleep(0.2)


def bench_size(episodes: int, repeat: int) -> list[tuple[str, list[float], bool]]:
    """Every timing of one size: (what, seconds of each repeat, held to the target)."""
    timings = []
    with private_service() as (env, root), tempfile.TemporaryDirectory() as work:
        store = FileStore(root)
        served = publish_adapter(store, Path(work) / "adapter")
        version = adapters.parse_served(served)[1]

        def write() -> None:
            write_episodes(store, "base", episodes, "SmolLM2-135M-Instruct", None, 7)
            write_episodes(store, "tuned", episodes, served, Adapter(name=ADAPTER, version=version), 3)

        timings.append((f"write {2 * episodes:,} episodes (setup)", [timed(write)[1]], False))

        def index() -> None:
            for mode in ("base", "tuned"):
                (root / index_key(mode, RUN)).unlink(missing_ok=True)
                assert len(run_index(store, mode, RUN)) == episodes

        timings.append(("index both runs (at job end)", repeated(index, repeat), False))
        out = Path(work) / "reports"
        timings.append(
            (
                "eval report (2 modes, CSV, 3 charts)",
                repeated(
                    lambda: write_report(store, [("base", RUN), ("tuned", RUN)], out / "eval", "bench", "http://v"),
                    repeat,
                ),
                True,
            )
        )
        timings.append(
            (
                "loop report (`loraloop report`)",
                repeated(
                    lambda: write_iteration_report(store, select_runs(store, [RUN]), out / "loop", "bench", "http://v"),
                    repeat,
                ),
                True,
            )
        )
        api, url = start_api(env)
        try:
            last = -(-episodes // PAGE)
            task = f"test-{FAMILIES[0]}-{episodes // ATTEMPTS // 2:05d}"
            key = f"trajectories/tuned/{RUN}/{task}__attempt_0.jsonl"
            pages = [
                ("viewer: runs", "/ui", {}),
                ("viewer: run, page 1", f"/ui/runs/tuned/{RUN}", {}),
                (f"viewer: run, page {last} (last)", f"/ui/runs/tuned/{RUN}", {"page": last}),
                (
                    "viewer: run filtered (outcome, task)",
                    f"/ui/runs/tuned/{RUN}",
                    {"outcome": "solved", "task": FAMILIES[0]},
                ),
                ("viewer: one episode", "/ui/episode", {"key": key}),
            ]
            with httpx.Client(base_url=url, timeout=60) as client:
                for label, path, params in pages:

                    def view(path: str = path, params: dict = params) -> None:
                        response = client.get(path, params=params)
                        assert response.status_code == 200 and ("<table" in response.text or "step-0" in response.text)

                    timings.append((label, repeated(view, repeat), True))
                grown = []
                for n in range(repeat):  # a run still being played: each view finds one more episode
                    write_episodes(store, "tuned", 1, served, None, 1, only_task=f"test-late-{n:05d}")
                    grown.append(timed(lambda: client.get(f"/ui/runs/tuned/{RUN}").raise_for_status())[1])
                timings.append(("viewer: run, page 1, one more episode (index rebuilt)", grown, True))
        finally:
            stop([api])
    return timings


def pyplot() -> None:
    """Import matplotlib's pyplot headless, as the charts do."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401


def main() -> int:
    """Time every size, print the table with PASS or MISSED per target."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", default="1000,10000", help="episodes per run, comma-separated sizes")
    parser.add_argument("--repeat", type=int, default=5, help="times each report and page is timed")
    add_out(parser, "report")
    args = parser.parse_args()
    _, import_s = timed(pyplot)
    lines = [
        "# Reports and viewer pages over large runs",
        "",
        f"{machine()}; {args.repeat} repeats each",
        "",
        "| episodes a run (in the store) | what | median s | slowest s | target | |",
        "|---:|---|---:|---:|---:|---|",
    ]
    missed = []
    for size in [int(s) for s in args.episodes.split(",")]:
        for what, seconds, held in bench_size(size, args.repeat):
            verdict = ("PASS" if max(seconds) < TARGET_S else "MISSED") if held else ""
            if verdict == "MISSED":
                missed.append(f"{what} at {size:,}")
            lines.append(
                f"| {size:,} ({2 * size:,}) | {what} | {statistics.median(seconds):.3f} | {max(seconds):.3f} "
                f"| {f'< {TARGET_S:g} s' if held else '–'} | {verdict} |"
            )
    lines += [
        "",
        f"- matplotlib import, once per process (not in the report times): {import_s:.2f} s",
        f"- target missed: {'; '.join(missed)}" if missed else "- every report and page view under 1 s",
    ]
    report("\n".join(lines), args.out)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
