"""`loraloop store verify`: is every episode of a run in the store, once and whole?"""

from __future__ import annotations

import typer

from loraloop.settings import get_settings

app = typer.Typer(help="The trajectory store (LORALOOP_STORE_URL).", no_args_is_help=True)


@app.command("verify")
def store_verify(
    run: str = typer.Option(..., "--run", help="the run id (a job's run_id)"),
    mode: str | None = typer.Option(None, "--mode", help="its experiment, when several have this run"),
    store_url: str | None = typer.Option(None, "--store", help="default: LORALOOP_STORE_URL"),
) -> None:
    """Missing, duplicated and corrupt episodes of a run against its plan; exit 1 when there is any."""
    from loraloop.store import open_store
    from loraloop.store.integrity import report, verify_run

    check = verify_run(open_store(store_url, get_settings()), run, mode)
    typer.echo(report(check))
    raise typer.Exit(0 if check.ok else 1)
