"""The `loraloop` command, with the HALO seed's flag names.

One module per command group; each only parses flags and calls the stage packages (tasks, rollout,
service, datasets, train, serve, evaluate). Known failures print one line and exit 1.
"""

from __future__ import annotations

import sys

import typer

from loraloop.cli import adapters, jobs, loop, models, report, rollout, serve, store, tasks, train
from loraloop.cli.common import console
from loraloop.errors import LoraloopError

app = typer.Typer(
    help="Serve, roll out, store, export, train LoRA, publish, evaluate.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(models.app, name="models")
app.add_typer(tasks.app, name="tasks")
app.command("rollout")(rollout.rollout)
app.command("verify-exploration")(rollout.verify_exploration)
app.command("export")(train.export)
app.command("train")(train.train_command())
app.command("publish")(adapters.publish)
app.add_typer(adapters.app, name="adapters")
app.command("eval")(rollout.eval_cmd)
app.command("report")(report.report)
app.add_typer(serve.app, name="serve")
app.add_typer(jobs.app, name="jobs")
app.add_typer(store.app, name="store")
app.command("worker")(jobs.worker)
app.command("demo")(loop.demo)
app.command("loop")(loop.loop)
app.command("agentbench")(loop.agentbench_command())
app.command("miniwob")(loop.miniwob_command())
app.command(**serve.renamed("serve-api", "serve task-server"))(serve.task_server)
app.command(**serve.renamed("rollout-api", "serve rollout-api"))(serve.rollout_api)


def main() -> None:
    """Entry point: known failures and invalid values print one clear line each and exit 1."""
    from pydantic import ValidationError

    try:
        app()
    except LoraloopError as exc:
        console.print(f"[bold red]error:[/] {exc}")
        sys.exit(1)
    except ValidationError as exc:
        for error in exc.errors():
            field = ".".join(str(part) for part in error["loc"])
            console.print(f"[bold red]error:[/] --{field}: {error['msg']} (got {error.get('input')!r})")
        sys.exit(1)
