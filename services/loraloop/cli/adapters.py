"""`loraloop publish` and `loraloop adapters`: versions in the store and the one vLLM serves."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from loraloop.cli.common import console
from loraloop.settings import get_settings

app = typer.Typer(help="Published adapters: versions in the store and the ones vLLM serves.", no_args_is_help=True)


def publish(
    adapter: Path = typer.Option(..., "--adapter", help="PEFT adapter folder"),
    name: str = typer.Option(..., "--name", help="adapter name (served as <name>-v<k>)"),
    load: bool = typer.Option(True, "--load/--no-load", help="hot-load into the running vLLM"),
) -> None:
    """Store the adapter under adapters/<name>/<version>/, load it into vLLM as <name>-<version> and verify it."""
    from loraloop.serve.publish import publish as do_publish

    metadata = do_publish(get_settings(), adapter, name, load=load)
    console.print(
        f"published {name} {metadata['version']} -> {metadata['store_key']}"
        + (
            f"; served as {metadata['served_name']}, in effect (its logprobs on "
            f"{metadata['verification']['prompts']} verification prompts differ from the base's by up to "
            f"{metadata['verification']['logprob_gap']:.2g})"
            if load
            else ""
        )
    )


@app.command("list")
def adapters_list(
    served: bool = typer.Option(True, "--served/--no-served", help="ask vLLM which version it serves"),
) -> None:
    """Every adapter with its versions, the version its bare name resolves to (`*`, when vLLM serves it)
    and the versions vLLM has loaded (as `<name>-vK`)."""
    from loraloop.serve.publish import loaded_versions, served_version
    from loraloop.store import adapters, open_store

    settings = get_settings()
    store = open_store(settings=settings)
    for name in adapters.names(store):
        live = served_version(settings, name) if served else None
        versions = " ".join(
            adapters.version_name(n) + ("*" if adapters.version_name(n) == live else "")
            for n in adapters.versions(store, name)
        )
        typer.echo(
            f"{name}\t{versions}"
            + (f"\tserved: {live}\tloaded: {' '.join(loaded_versions(settings, name))}" if served else "")
        )


@app.command("show")
def adapters_show(
    name: str = typer.Argument(...),
    version: str | None = typer.Option(None, "--version", help="vN (default: the latest)"),
) -> None:
    """A version's metadata: base model, dataset digest, training metrics, verification."""
    from loraloop.store import adapters, open_store

    metadata = adapters.read_metadata(open_store(settings=get_settings()), name, version)
    for long in ("prompt_set", "fingerprint"):  # the prompts and their logprobs: long, and in the store
        metadata.get("verification", {}).pop(long, None)
    typer.echo(json.dumps(metadata, indent=2))


@app.command("rollback")
def adapters_rollback(
    name: str = typer.Argument(...),
    to: str | None = typer.Option(None, "--to", help="vN (default: the one before the served one)"),
) -> None:
    """Serve an earlier version (as `<name>-vK`, verified against the logprobs recorded when it was published) and
    make bare-name rollouts use it."""
    from loraloop.serve.publish import rollback

    version, check = rollback(get_settings(), name, to)
    how = (
        "its logprobs match the ones recorded at publish"
        if check["matches_recorded"]
        else "no logprobs were recorded for it; they differ from the base's"
    )
    console.print(f"{name}: vLLM now serves {version}; {how} ({check['prompts']} prompts)")


@app.command("sync")
def adapters_sync(
    every: float | None = typer.Option(None, "--every", min=1, help="repeat every SECONDS (a service)"),
    heartbeat: Path | None = typer.Option(None, "--heartbeat", help="file touched after each good pass (healthcheck)"),
) -> None:
    """Make vLLM serve every stored adapter at its wanted version: after a restart, vLLM-LoRA gets them back."""
    from loraloop.serve.sync import keep_synced

    keep_synced(get_settings(), every, heartbeat, say=console.print)
