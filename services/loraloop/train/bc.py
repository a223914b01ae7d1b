"""Behavioural cloning: TRL's SFTTrainer with a LoRA adapter, loss on the completion only."""

from __future__ import annotations

from loraloop.logs import get_logger
from loraloop.train.backend import load_model
from loraloop.train.config import BCConfig
from loraloop.train.data import load_rows
from loraloop.train.episode_rows import episode_sequences
from loraloop.train.harness import common_args, tokenized, train_and_save

log = get_logger("loraloop.train")


def train_bc(cfg: BCConfig) -> dict:
    """Train a LoRA adapter on bc.jsonl and save it (PEFT folder) with metrics and a loss curve; with
    `whole_episodes` on one sequence per episode (every turn in the loss) instead of one per turn."""
    rows = load_rows(cfg.dataset_path, ("prompt", "completion"))  # a bad file fails before TRL is imported
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    model, tokenizer, peft_config = load_model(cfg)
    args = SFTConfig(
        **common_args(cfg),
        max_length=cfg.max_length,
        completion_only_loss=True,
        train_sampling_strategy="group_by_length" if cfg.group_by_length else "random",  # "random": the default
    )
    data = episode_sequences(rows, tokenizer) if cfg.whole_episodes else rows
    trainer = SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(data),
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    lengths = [len(x["input_ids"]) for x in tokenized(trainer)]
    warn_if_cut(lengths, cfg.max_length)
    tokens = sum(lengths)
    return train_and_save(trainer, tokenizer, cfg, "bc", len(rows), tokens, {"sequences": len(data)})


def warn_if_cut(lengths: list[int], max_length: int) -> int:
    """Say how many training sequences TRL cut to `max_length` tokens (it does so silently: a cut sequence is
    exactly that long after its truncation); return that count."""
    cut = sum(1 for n in lengths if n >= max_length)
    if cut:
        log.warning(
            f"{cut} of {len(lengths)} training sequences reach max_length={max_length} tokens and are cut "
            "to it (raise --max_length, or lower LORALOOP_PROMPT_CHAR_BUDGET)"
        )
    return cut
