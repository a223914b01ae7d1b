"""The RL loss and batching on pre-collected multi-turn episodes, inside transformers' Trainer.

Why not TRL's GRPOTrainer (1.16): it owns generation. Its `rollout_func` is called from inside the
training step with a fixed `num_generations` per prompt and must return one completion per sample,
so an episode whose turns do not pack into one sequence cannot be given to it; and it uses the
sampling logprobs for the importance ratio only with its own vLLM weight-sync client (`use_vllm`),
whereas our vLLM serves published LoRA versions behind the rollout service. So the custom part is
kept to the loss and the batching: the optimiser, schedule, checkpoints, logging (TensorBoard) and
device handling are transformers' Trainer, and the log-probabilities come from TRL's
`selective_log_softmax`.

The loss is PPO's clipped surrogate with the ratio taken against the logprobs vLLM sampled with,
averaged over every sampled token of the batch (DAPO's token-level mean); observation and prompt
tokens are masked.
"""

from __future__ import annotations

from collections import defaultdict

import torch
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from transformers import Trainer, TrainerCallback
from trl.trainer.utils import selective_log_softmax

from loraloop.train.rl_batch import Row


def collate(rows: list[dict], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad a batch of rows into tensors; padding is masked everywhere."""
    width = max(len(r["input_ids"]) for r in rows)

    def padded(key: str, fill, dtype) -> torch.Tensor:
        return torch.tensor([r[key] + [fill] * (width - len(r[key])) for r in rows], dtype=dtype)

    return {
        "input_ids": padded("input_ids", pad_id, torch.long),
        "attention_mask": torch.tensor(
            [[1] * len(r["input_ids"]) + [0] * (width - len(r["input_ids"])) for r in rows], dtype=torch.long
        ),
        "completion_mask": padded("completion_mask", 0, torch.float32),
        "old_logprobs": padded("old_logprobs", 0.0, torch.float32),
        "advantages": torch.tensor([r["advantage"] for r in rows], dtype=torch.float32),
    }


def clipped_loss(
    logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, clip_eps: float
) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO's clipped surrogate over sampled tokens, token-mean; returns the loss and its diagnostics."""
    ratio = torch.exp(logprobs - old_logprobs)
    adv = advantages.unsqueeze(1)
    surrogate = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    tokens = mask.sum().clamp(min=1)
    loss = -(surrogate * mask).sum() / tokens
    with torch.no_grad():
        clipped = ((ratio - 1).abs() > clip_eps).float()
        stats = {
            "ratio_mean": float((ratio * mask).sum() / tokens),
            "clip_fraction": float((clipped * mask).sum() / tokens),
            "logprob_gap": float(((logprobs - old_logprobs).abs() * mask).sum() / tokens),
        }
    return loss, stats


class RLTrainer(Trainer):
    """transformers' Trainer with the clipped policy-gradient loss on token-exact turns."""

    def __init__(self, *args, clip_eps: float = 0.2, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.clip_eps = clip_eps
        self._diagnostics: dict[str, list[float]] = defaultdict(list)

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """Log-probabilities of the sequence's own next tokens, then the clipped surrogate on the sampled ones."""
        ids = inputs["input_ids"]
        logits = model(input_ids=ids, attention_mask=inputs["attention_mask"]).logits[:, :-1]
        logprobs = selective_log_softmax(logits, ids[:, 1:])
        loss, stats = clipped_loss(
            logprobs,
            inputs["old_logprobs"][:, 1:],
            inputs["advantages"],
            inputs["completion_mask"][:, 1:],
            self.clip_eps,
        )
        for name, value in stats.items():
            self._diagnostics[name].append(value)
        return loss

    def log(self, logs: dict[str, float], *args, **kwargs) -> None:
        """Add the mean ratio, clip fraction and logprob gap since the last log to what the Trainer logs."""
        for name, values in self._diagnostics.items():
            if values and "loss" in logs:
                logs[name] = round(sum(values) / len(values), 4)
        if "loss" in logs:
            self._diagnostics.clear()
        super().log(logs, *args, **kwargs)


def as_dataset(rows: list[Row]):
    """The rows as a `datasets.Dataset` the Trainer can shuffle and batch."""
    from datasets import Dataset

    return Dataset.from_list(
        [
            {
                "input_ids": r.input_ids,
                "completion_mask": r.completion_mask,
                "old_logprobs": r.old_logprobs,
                "advantage": r.advantage,
            }
            for r in rows
        ]
    )


class StepBar(TrainerCallback):
    """A Rich bar over an iteration's optimiser steps (the Trainer's own tqdm bar is turned off)."""

    def __init__(self, label: str, console) -> None:
        self.label = label
        self.console = console
        self.progress: Progress | None = None

    def on_train_begin(self, args, state, control, **kwargs):
        """Start the bar at 0 of the run's optimiser steps."""
        self.progress = Progress(
            TextColumn(self.label),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self.progress.start()
        self.bar = self.progress.add_task(self.label, total=state.max_steps)

    def on_step_end(self, args, state, control, **kwargs):
        """Move the bar to the step just taken."""
        self.progress.update(self.bar, completed=state.global_step)

    def on_train_end(self, args, state, control, **kwargs):
        """Take the bar down."""
        self.progress.stop()
