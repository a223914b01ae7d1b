"""`loraloop export` and `loraloop train`: datasets from the store, LoRA adapters from datasets."""

from __future__ import annotations

from pathlib import Path

import typer

from loraloop.cli.common import console
from loraloop.settings import get_settings


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


def train(
    algorithm: str = typer.Argument(..., help="bc | dpo | grpo | grpo-online | rl"),
    base_model: str | None = typer.Option(None, "--base_model", "--base-model", help="default LORALOOP_MODEL_DIR"),
    dataset_path: str | None = typer.Option(
        None,
        "--dataset_path",
        "--dataset-path",
        help="a file, file:// or s3:// URL (default volumes/datasets/ALGO.jsonl)",
    ),
    output_dir: Path | None = typer.Option(
        None, "--output_dir", "--output-dir", help="default volumes/checkpoints/ALGO_lora"
    ),
    lora_r: int | None = typer.Option(None, "--lora_r"),
    lora_alpha: int | None = typer.Option(None, "--lora_alpha"),
    lr: float | None = typer.Option(None, "--lr"),
    epochs: float | None = typer.Option(None, "--epochs"),
    batch_size: int | None = typer.Option(None, "--batch_size"),
    gradient_accumulation_steps: int | None = typer.Option(None, "--gradient_accumulation_steps"),
    max_length: int | None = typer.Option(None, "--max_length"),
    seed: int | None = typer.Option(None, "--seed"),
    beta: float | None = typer.Option(None, "--beta", help="dpo, grpo: KL weight"),
    num_generations: int | None = typer.Option(None, "--num_generations", help="grpo: completions per prompt"),
    max_completion_length: int | None = typer.Option(None, "--max_completion_length", help="grpo"),
    save_steps: int | None = typer.Option(None, "--save_steps", help="checkpoint every N steps"),
    subset: str | None = typer.Option(None, "--subset", help="grpo-online, rl: tasks of the registry to train on"),
    iterations: int | None = typer.Option(None, "--iterations", help="rl: rollout-train-publish iterations"),
    tasks_per_iteration: int | None = typer.Option(
        None, "--tasks_per_iteration", "--sample_size", help="rl: tasks sampled per iteration"
    ),
    rollouts_per_task: int | None = typer.Option(None, "--rollouts_per_task", help="rl: the group size (>= 2)"),
    temperature: float | None = typer.Option(None, "--temperature", help="grpo, rl: sampling temperature"),
    max_staleness: int | None = typer.Option(
        None, "--max_staleness", help="rl: drop episodes sampled more than K versions back"
    ),
    adapter_name: str | None = typer.Option(None, "--adapter_name", help="rl: published as NAME-v<k>"),
    experiment: str | None = typer.Option(None, "--experiment", help="rl: the rollouts' experiment"),
    eval_subset: str | None = typer.Option(None, "--eval_subset", help="rl: held-out tasks"),
    eval_every: int | None = typer.Option(None, "--eval_every", help="rl: held-out eval every N iterations"),
    eval_tasks: int | None = typer.Option(None, "--eval_tasks", help="rl: held-out tasks evaluated"),
    init_adapter: str | None = typer.Option(None, "--init_adapter", help="rl: warm start (a PEFT adapter folder)"),
    clip_eps: float | None = typer.Option(None, "--clip_eps", help="rl: PPO clip of the importance ratio"),
    concurrency: int | None = typer.Option(None, "--concurrency", help="rl: episodes in flight (embedded)"),
    from_run: str | None = typer.Option(
        None,
        "--from_run",
        help="rl: train on the stored episodes of MODE/RUN_ID "
        "(e.g. the gateway's) instead of rolling out; no held-out eval",
    ),
    resume: bool = typer.Option(False, "--resume", help="go on from the last checkpoint in --output_dir"),
    load_in_4bit: bool = typer.Option(False, "--load_in_4bit", help="unsloth on CUDA: 4-bit base weights"),
) -> None:
    """Train a LoRA adapter with TRL + PEFT (unsloth on CUDA): bc (SFTTrainer), dpo (DPOTrainer), grpo (GRPOTrainer),
    grpo-online (GRPOTrainer scored by real episodes; --dataset_path is then a task registry), rl (online
    multi-turn RL: rollouts of the adapter published last, trained on whole episodes, published as the next
    version, every iteration; --dataset_path is a task registry; a run started again goes on where it stopped).

    Defaults per algorithm are the seed's; only the flags given override them. Under
    `accelerate launch -m loraloop.cli train …` the same command trains on several GPUs.
    """
    from loraloop.training import run_training

    overrides = dict(
        lora_r=lora_r,
        lora_alpha=lora_alpha,
        lr=lr,
        epochs=epochs,
        batch_size=batch_size,
        gradient_accumulation_steps=gradient_accumulation_steps,
        max_length=max_length,
        seed=seed,
        beta=beta,
        num_generations=num_generations,
        max_completion_length=max_completion_length,
        save_steps=save_steps,
        subset=subset,
        iterations=iterations,
        tasks_per_iteration=tasks_per_iteration,
        rollouts_per_task=rollouts_per_task,
        temperature=temperature,
        max_staleness=max_staleness,
        adapter_name=adapter_name,
        experiment=experiment,
        eval_subset=eval_subset,
        eval_every=eval_every,
        eval_tasks=eval_tasks,
        init_adapter=init_adapter,
        clip_eps=clip_eps,
        concurrency=concurrency,
        from_run=from_run,
    )
    output, metrics = run_training(
        algorithm,
        get_settings(),
        overrides=overrides,
        dataset_path=dataset_path,
        output_dir=output_dir,
        base_model=base_model,
        resume=resume,
        load_in_4bit=load_in_4bit,
    )
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
