"""`loraloop report`: success across the loop's iterations and training algorithms, from runs in the store."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.progress import track

from loraloop.cli.common import console
from loraloop.settings import get_settings


def report(
    runs: list[str] = typer.Option(
        ...,
        "--runs",
        help="a run id in the store, or a pattern such as 'smollm_rl-*' "
        "(an RL run's iterations and evaluations); repeat for more",
    ),
    out: Path = typer.Option(Path("volumes/reports/iterations"), "--out", help="report.md, report.csv, charts"),
    store_url: str | None = typer.Option(None, "--store", help="default: LORALOOP_STORE_URL"),
) -> None:
    """Success by loop iteration (adapter version) and by training algorithm over the runs `make loop` and
    `loraloop train rl` stored: a Markdown table with 95% intervals whose rows link to the episodes behind
    them in the viewer, a CSV and two charts under OUT."""
    from loraloop.evaluate.iterations import select_runs, write_iteration_report
    from loraloop.evaluate.report import viewer_address
    from loraloop.store import open_store

    settings = get_settings()
    store = open_store(store_url, settings)
    chosen = select_runs(store, runs)
    title = f"Success across loop iterations: {', '.join(runs)}"
    md, measured = write_iteration_report(
        store, track(chosen, "reading runs", console=console, transient=True), out, title, viewer_address(settings)
    )
    typer.echo(md.read_text())
    console.print(
        f"{len(measured)} measurements from {len(chosen)} runs; report: {md}  csv: {md.with_suffix('.csv')}"
        f"  charts: {out}/success_by_iteration.png, {out}/success_by_algorithm.png"
    )
