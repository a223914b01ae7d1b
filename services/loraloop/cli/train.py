"""`loraloop export` and `loraloop train`: datasets from the store, LoRA adapters from datasets."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from pathlib import Path

import typer

from loraloop.cli.common import console
from loraloop.settings import get_settings
from loraloop.train.config import CONFIGS


def export(
    input: str = typer.Option("trajectories", "--input", "--input_dir", help="prefix in the store"),
    output_dir: Path = typer.Option(Path("volumes/datasets"), "--output_dir", "--output-dir"),
    format: str = typer.Option("bc", "--format", help="bc | dpo | grpo | all"),
    pairing_strategy: str = typer.Option(
        "default", "--pairing_strategy", "--pairing-strategy", help="default | progress_ranked"
    ),
    top_percent: float = typer.Option(
        0.2, "--top_percent", "--top-percent", help="progress_ranked: BC keeps the top ceil(n*P) episodes of a task"
    ),
    store: str | None = typer.Option(None, "--store", help="store URL (default LORALOOP_STORE_URL)"),
) -> None:
    """Export stored trajectories as TRL datasets (bc.jsonl, dpo.jsonl, grpo.jsonl) with a manifest."""
    from loraloop.datasets.export import BUILDERS
    from loraloop.datasets.export import export as do_export
    from loraloop.store import open_store

    settings = get_settings()
    formats = list(BUILDERS) if format == "all" else [f.strip() for f in format.split(",")]
    manifest = do_export(
        open_store(store, settings),
        input.strip("/"),
        output_dir,
        formats,
        char_budget=settings.prompt_char_budget,
        pairing=pairing_strategy,
        top_percent=top_percent,
    )
    rows = ", ".join(f"{f}.jsonl: {n} rows" for f, n in manifest["rows"].items())
    console.print(
        f"{rows} from {manifest['episodes']} episodes ({manifest['successful_episodes']} successful) "
        f"of {manifest['tasks']} tasks -> {output_dir}"
    )
    for problem in manifest["malformed"][:5]:
        console.print(f"  [yellow]skipped[/] {problem}")


def _train_flags() -> list[inspect.Parameter]:
    """One option per field of any algorithm's config (train/config.py), in their order, each defaulting to None:
    the algorithm's own default stands unless the flag is given."""
    params: dict[str, inspect.Parameter] = {}
    for config in CONFIGS.values():
        hints = typing.get_type_hints(config)
        for f in dataclasses.fields(config):
            if f.name in params or "help" not in f.metadata:
                continue
            on_off = f"--{f.name}/--no-{f.name}" if hints[f.name] is bool else f"--{f.name}"  # a bool: either way
            flags = (on_off, *f.metadata["aliases"])
            default = typer.Option(None, *flags, help=f.metadata["help"])
            params[f.name] = inspect.Parameter(
                f.name, inspect.Parameter.KEYWORD_ONLY, annotation=hints[f.name] | None, default=default
            )
    return list(params.values())


def _train(algorithm: str, **flags) -> None:
    from loraloop.training import run_training

    output, metrics = run_training(algorithm, get_settings(), flags)
    if algorithm == "rl":
        typer.echo(Path(metrics["report"]).read_text())
        console.print(
            f"rl: serving {metrics['adapter']}; report {metrics['report']}, curve {metrics['curve']}, "
            f"TensorBoard logs in {output / 'tensorboard'}"
        )
        return
    console.print(
        f"{algorithm} adapter saved to {output}: loss {metrics['first_loss']} -> {metrics['final_loss']}, "
        f"{metrics['tokens_per_s']} tokens/s ({metrics['backend']})"
    )


def train_command():
    """`loraloop train ALGO`: the algorithm as its argument, its flags built from the training configs."""

    def train(algorithm: str, **flags) -> None:
        _train(algorithm, **flags)

    algorithm = inspect.Parameter(
        "algorithm",
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        annotation=str,
        default=typer.Argument(..., help=" | ".join(CONFIGS)),
    )
    train.__signature__ = inspect.Signature([algorithm, *_train_flags()])
    train.__doc__ = """Train a LoRA adapter with TRL + PEFT (unsloth on CUDA): bc (SFTTrainer), dpo (DPOTrainer),
    grpo (GRPOTrainer), grpo-online (GRPOTrainer scored by real episodes; --dataset_path is then a task registry),
    rl (online multi-turn RL: rollouts of the adapter published last, trained on whole episodes, published as the
    next version, every iteration; --dataset_path is a task registry; a run started again goes on where it stopped).

    Defaults per algorithm are the seed's; only the flags given override them, and a flag the algorithm does not
    take fails naming it. Under `accelerate launch -m loraloop.cli train …` the same command trains on several GPUs.
    """
    return train
