"""Offline GRPO: TRL's GRPOTrainer on stored states, each completion rewarded by the stored returns.

The reward of a sampled action is the best return of the episodes that took it in that state,
-1 if it does not parse, 0 if no episode tried it (datasets.grpo.action_reward).
"""

from __future__ import annotations

import json
import math

from loraloop.datasets.grpo import action_reward
from loraloop.store.records import LEGACY_KIND
from loraloop.train.backend import load_model
from loraloop.train.config import GRPOConfig
from loraloop.train.data import load_rows
from loraloop.train.harness import common_args, train_and_save


def stored_return_reward(completions, action_returns, env, **_kwargs) -> list[float | None]:
    """TRL reward function: one reward per completion from its row's action returns, parsed by the row's env kind."""
    texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
    return [action_reward(text, json.loads(returns), kind) for text, returns, kind in zip(texts, action_returns, env)]


def train_grpo(cfg: GRPOConfig) -> dict:
    """Train a LoRA adapter with GRPO on grpo.jsonl (prompt + action_returns) and save it."""
    rows = load_rows(cfg.dataset_path, ("prompt", "action_returns"))  # a bad file fails before TRL is imported
    from datasets import Dataset
    from trl import GRPOConfig as TRLGRPOConfig
    from trl import GRPOTrainer

    for row in rows:  # a JSON string keeps the Arrow schema fixed whatever the actions are
        row["action_returns"] = json.dumps(row["action_returns"])
        row.setdefault("env", LEGACY_KIND)  # rows exported before they named their kind are shell rows
    model, tokenizer, peft_config = load_model(cfg)
    args = TRLGRPOConfig(
        **common_args(cfg),
        beta=cfg.beta,
        num_generations=cfg.num_generations,
        max_completion_length=cfg.max_completion_length,
        temperature=cfg.temperature,
        generation_batch_size=cfg.num_generations * math.ceil(cfg.batch_size / cfg.num_generations),
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[stored_return_reward],
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    tokens = len(rows) * cfg.num_generations * cfg.max_completion_length
    return train_and_save(
        trainer, tokenizer, cfg, "grpo", len(rows), tokens, {"beta": cfg.beta, "num_generations": cfg.num_generations}
    )
