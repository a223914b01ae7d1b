"""Follow a job with a live bar: episodes done of total, solved, failed, success rate so far, episodes per minute.

The bar reads one `JobStatus`, whether it comes from this process's book, Redis or the rollout API.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from loraloop.service.models import FINAL_STATES, JobStatus


def progress_bar(quiet: bool) -> Progress:
    """Episodes done of total, solved, failed, success rate so far and episodes per minute (stderr)."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(
            "episodes · solved {task.fields[solved]} · failed {task.fields[failed]} · "
            "rate {task.fields[rate]} · {task.fields[epm]} ep/min"
        ),
        TimeElapsedColumn(),
        disable=quiet,
    )


def follow(poll: Callable[[], JobStatus], *, quiet: bool = False, interval: float = 0.5) -> JobStatus:
    """Show a job's progress until it is done or cancelled; return its last status."""
    status = poll()
    with progress_bar(quiet) as progress:
        bar = progress.add_task(status.mode, total=status.total, solved=0, failed=0, rate="-", epm=0.0)
        while True:
            rate = "-" if status.success_rate is None else f"{status.success_rate:.0%}"
            progress.update(
                bar,
                completed=status.done,
                total=status.total,
                solved=status.solved,
                failed=status.failed,
                rate=rate,
                epm=status.episodes_per_min,
            )
            if status.state in FINAL_STATES:
                return status
            time.sleep(interval)
            status = poll()
