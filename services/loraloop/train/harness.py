"""What every trainer does around TRL: common arguments, checkpoints and resume, saving, the report."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import TYPE_CHECKING

from loraloop.train.backend import NAMES, resolve_backend, train_dtype
from loraloop.train.config import LoraTrainConfig
from loraloop.train.report import write_training_report
from loraloop.train.verify_logprobs import save_trainer_logprobs

if TYPE_CHECKING:
    from datasets import Dataset


def tokenized(trainer) -> Dataset:
    """The rows a TRL trainer tokenized from the Dataset it was given (a Dataset again: TRL maps it)."""
    from datasets import Dataset  # the trainers' own import: not on the CLI's path

    dataset = trainer.train_dataset
    if not isinstance(dataset, Dataset):
        raise TypeError(f"{type(trainer).__name__} holds a {type(dataset).__name__}, not the tokenized Dataset")
    return dataset


def common_args(cfg: LoraTrainConfig) -> dict:
    """Arguments every TRL config takes the same way (CPU or CUDA, TensorBoard, checkpoints)."""
    import torch

    return dict(
        output_dir=cfg.output_dir,
        num_train_epochs=cfg.epochs,
        per_device_train_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.gradient_accumulation_steps,
        learning_rate=cfg.lr,
        optim=cfg.optim,
        logging_steps=cfg.logging_steps,
        report_to=["tensorboard"],
        seed=cfg.seed,
        save_strategy="steps" if cfg.save_steps else "no",
        save_steps=cfg.save_steps or 500,
        bf16=train_dtype() == "bfloat16",
        use_cpu=not torch.cuda.is_available(),
        lr_scheduler_type="constant",
        dataloader_num_workers=0,
        gradient_checkpointing=False,
    )


def train_and_save(
    trainer, tokenizer, cfg: LoraTrainConfig, algorithm: str, rows: int, tokens: int, extra: dict | None = None
) -> dict:
    """Train (resuming when asked), save the adapter, and write training_metrics.json and loss.png."""
    started = time.perf_counter()
    trainer.train(resume_from_checkpoint=True if cfg.resume else None)
    elapsed = time.perf_counter() - started
    out = Path(cfg.output_dir)
    trainer.model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    save_trainer_logprobs(trainer.model, tokenizer, out, str(cfg.dataset_path))  # what publish checks vLLM against
    tokens = int(tokens * cfg.epochs)
    return write_training_report(
        trainer.state.log_history,
        out,
        {
            "algorithm": algorithm,
            "backend": NAMES[resolve_backend(cfg.backend)],
            "dtype": str(trainer.model.dtype).removeprefix("torch."),
            "rows": rows,
            "train_tokens": tokens,
            "tokens_per_s": round(tokens / elapsed, 1),
            "base_model": cfg.base_model,
            "lora_r": cfg.lora_r,
            "lora_alpha": cfg.lora_alpha,
            "lr": cfg.lr,
            "epochs": cfg.epochs,
            "dataset_path": str(cfg.dataset_path),
            "dataset_digest": digest(Path(cfg.dataset_path)),
            **(extra or {}),
        },
    )


def digest(path: Path) -> str:
    """sha256 of a dataset file, or of every file of a task registry folder (names and bytes)."""
    sha = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        sha.update(file.relative_to(path).as_posix().encode() if path.is_dir() else b"")
        sha.update(file.read_bytes())
    return sha.hexdigest()
