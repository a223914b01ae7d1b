"""Behavioural cloning: TRL's SFTTrainer with a LoRA adapter, loss on the completion only."""

from __future__ import annotations

from loraloop.train.backend import load_model
from loraloop.train.config import BCConfig
from loraloop.train.data import load_rows
from loraloop.train.episode_rows import episode_sequences
from loraloop.train.harness import common_args, train_and_save


def train_bc(cfg: BCConfig) -> dict:
    """Train a LoRA adapter on bc.jsonl and save it (PEFT folder) with metrics and a loss curve; with
    `whole_episodes` on one sequence per episode (every turn in the loss) instead of one per turn."""
    rows = load_rows(cfg.dataset_path, ("prompt", "completion"))  # a bad file fails before TRL is imported
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    model, tokenizer, peft_config = load_model(cfg)
    args = SFTConfig(**common_args(cfg), max_length=cfg.max_length, completion_only_loss=True)
    data = episode_sequences(rows, tokenizer) if cfg.whole_episodes else rows
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(data),
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    tokens = sum(len(x["input_ids"]) for x in trainer.train_dataset)
    return train_and_save(trainer, tokenizer, cfg, "bc", len(rows), tokens, {"sequences": len(data)})
