"""What every bench shares: the `--out [PATH]` flag, printing and saving its Markdown, the machine line under
its title, nearest-rank percentiles, one call timed, a free loopback port.

The benches run as scripts (`python bench/NAME.py`), so they import this module as `results`."""

from __future__ import annotations

import argparse
import os
import platform
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"


def add_out(parser: argparse.ArgumentParser, name: str) -> None:
    """`--out [PATH]`: also write the Markdown to PATH (bench/results/NAME.md when no path is given)."""
    default = RESULTS / f"{name}.md"
    parser.add_argument(
        "--out",
        nargs="?",
        const=default,
        type=Path,
        default=None,
        help=f"also write the Markdown to this file (default {default.relative_to(ROOT)})",
    )


def report(markdown: str, out: Path | None) -> None:
    """Print the bench's Markdown and, with `--out`, add it to that file as the newest entry: a heading with the
    time and the command, placed before the file's first `## ` entry (after its title and method), so that the
    results measured before stay (a results file is a history, newest first; it was once overwritten whole)."""
    print(markdown)
    if out is None:
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    entry = f"## {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, `{' '.join(sys.argv)}`\n\n{markdown.strip()}\n"
    text = out.read_text() if out.exists() else ""
    first = text.find("\n## ")  # the newest entry so far: the new one goes before it
    if first >= 0:
        text = text[: first + 1] + entry + "\n" + text[first + 1 :]
    else:
        text = (text.rstrip("\n") + "\n\n" if text else "") + entry
    out.write_text(text)


def machine() -> str:
    """CPUs, platform, Python and the time now (UTC): where and when the figures below it were taken."""
    return (
        f"{os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) of durations in seconds, in milliseconds, nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))] * 1000


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """(result, seconds) of one call."""
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def local_settings(work: Path, port: int, model: str):
    """The settings of a bench that starts its own vLLM on `port` and keeps its store and adapters under `work`, so
    that nothing it writes reaches the project's volumes (a loraloop Settings; imported here, not at the top, for
    the benches that need none)."""
    from loraloop.settings import Settings

    return Settings(
        vllm_port=port,
        vllm_url=f"http://127.0.0.1:{port}/v1",
        store_url=f"file://{work / 'store'}",
        adapters_dir=work / "adapters",
        base_model_name=model,
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rl_from_warm_start(plan, settings, warm_start: Path, args: argparse.Namespace, **overrides):
    """The RL config the RL benches time (bench/rl.py, bench/rl_async.py): `args.iterations` of `args.tasks` train
    tasks x `args.rollouts` episodes at temperature 0.7, lr 1e-4, from the BC adapter in `warm_start`, with no
    held-out evaluation inside the run (each bench scores the result itself, outside the timing)."""
    return plan.rl_config(
        settings,
        warm_start,
        iterations=args.iterations,
        tasks_per_iteration=args.tasks,
        rollouts_per_task=args.rollouts,
        temperature=0.7,
        lr=1e-4,
        eval_every=0,
        **overrides,
    )
