"""Direct preference optimisation: TRL's DPOTrainer with a LoRA adapter (the frozen base is the reference)."""

from __future__ import annotations

from loraloop.train.backend import load_model
from loraloop.train.config import DPOConfig
from loraloop.train.data import load_rows
from loraloop.train.harness import common_args, tokenized, train_and_save


def train_dpo(cfg: DPOConfig) -> dict:
    """Train a LoRA adapter on dpo.jsonl (conversational prompt/chosen/rejected) and save it."""
    rows = load_rows(cfg.dataset_path, ("prompt", "chosen", "rejected"))  # a bad file fails before TRL is imported
    from datasets import Dataset
    from trl import DPOConfig as TRLDPOConfig
    from trl import DPOTrainer

    model, tokenizer, peft_config = load_model(cfg)
    args = TRLDPOConfig(**common_args(cfg), beta=cfg.beta, max_length=cfg.max_length)
    trainer = DPOTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    dataset = tokenized(trainer)
    tokens = sum(
        len(x.get("prompt_input_ids", [])) + len(x.get("chosen_input_ids", [])) + len(x.get("rejected_input_ids", []))
        for x in dataset
    )
    return train_and_save(trainer, tokenizer, cfg, "dpo", len(rows), tokens, {"beta": cfg.beta})
