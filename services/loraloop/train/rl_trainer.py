"""The RL loss and batching on pre-collected multi-turn episodes, inside transformers' Trainer.

Why not TRL's GRPOTrainer (1.16): it owns generation. Its `rollout_func` is called from inside the
training step with a fixed `num_generations` per prompt and must return one completion per sample,
so an episode whose turns do not pack into one sequence cannot be given to it; and it uses the
sampling logprobs for the importance ratio only with its own vLLM weight-sync client (`use_vllm`),
whereas our vLLM serves published LoRA versions behind the rollout service. So the custom part is
kept to the loss and the batching: the optimiser, schedule, checkpoints, logging (TensorBoard) and
device handling are transformers' Trainer, and the log-probabilities come from TRL's `selective_log_softmax`
over the model's logits or, with `fused_logprobs`, from TRL's fused LM head (`add_fused_lm_head`: the head runs
in tiles and no vocabulary-wide logits are held; not with unsloth, whose forward is its own).

Memory: an optimiser step of `batch_size` turns runs as forward passes of `micro_batch_size` turns whose
gradients are accumulated (the Trainer's gradient accumulation); the loss is still the token mean over the
whole step (DAPO's), because `_get_num_items_in_batch` counts the tokens the step trains on (the sampled ones,
less those masked IS rejects) and each pass divides its sum by that count. Under `accelerate launch` (DDP) the step's
turns are shared by the processes (`step_layout`) and the count is the whole step's, across processes.

The loss is PPO's clipped surrogate averaged over every sampled token of the batch (DAPO's token-level
mean); observation and prompt tokens are masked. Two modes, named as verl's rollout correction names them:

- decoupled (the default; AReaL's decoupled PPO): the ratio is clipped against the proximal policy, the
  trainer's own logprobs recomputed before the iteration's first update, and every token is weighted by a
  truncated importance weight between the proximal policy and the sampler (vLLM's logprobs): the clip
  handles the trainer's drift, the weight the sampler/trainer mismatch and staleness. The rows the first optimiser
  step trains on take their proximal logprobs from that step's own forward pass, detached (`first_step_rows`): no
  parameter has moved yet, so they are the same numbers, and an iteration of one step needs no proximal pass at all
  (TRL's GRPOTrainer skips its `old_per_token_logps` for the same reason). `rollout_is`: the
  weight per token or per sequence (their product), capped at `rollout_is_threshold`; `rollout_rs`: tokens
  or sequences whose ratio is outside [1/threshold, threshold] are masked out instead (masked IS).
- bypass (`bypass_mode`): the ratio is taken against the sampler's logprobs directly and the clip absorbs
  both; no proximal pass. What the loop did before.

TRL 1.16 has the same correction (`vllm_importance_sampling_mode`), but inline in GRPOTrainer's generation
step, not as a function another trainer can call; `rollout_correction` below follows it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass

import torch
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from transformers import Trainer, TrainerCallback
from trl.trainer.utils import selective_log_softmax

from loraloop.train.inference import scoring
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
        **({"prox_logprobs": padded("prox_logprobs", 0.0, torch.float32)} if "prox_logprobs" in rows[0] else {}),
    }


@dataclass(frozen=True)
class Correction:
    """How the sampler/trainer mismatch is corrected (verl's `rollout_correction` settings)."""

    rollout_is: str | None = "token"  # token | sequence | None: importance weights, truncated at the threshold
    rollout_is_threshold: float = 2.0
    rollout_rs: str | None = None  # token | sequence | None: mask what lies outside [1/threshold, threshold]
    rollout_rs_threshold: float = 2.0


def world_size() -> int:
    """The training processes `accelerate launch` (or torchrun) started: WORLD_SIZE, 1 in a plain process."""
    import os

    return int(os.environ.get("WORLD_SIZE", "1"))


def step_layout(batch_size: int, micro_batch_size: int, processes: int) -> tuple[int, int] | None:
    """(turns per forward pass, passes accumulated per process) for an optimiser step of `batch_size` turns shared
    by `processes` data-parallel processes, so that the step is the same whatever the process count; None when the
    turns do not split into whole passes on every process (an empty step included)."""
    if batch_size < 1 or micro_batch_size < 1 or processes < 1 or batch_size % (micro_batch_size * processes):
        return None
    return micro_batch_size, batch_size // (micro_batch_size * processes)


def first_step_rows(rows: int, batch_size: int, epochs: float, processes: int, masked_is: bool) -> int:
    """How many of an iteration's rows, in training order (the Trainer's sampler sequential), the first optimiser step
    trains on before any parameter moves, so that its own forward pass gives their proximal logprobs (detached) and the
    pass before the update can leave them out. 0 when another epoch shows them again after an update, or with masked
    IS, whose token count (`_get_num_items_in_batch`) needs the proximal logprobs before the step; with several
    processes only when every row fits in the first step (accelerate repeats early rows to even out the last one)."""
    if epochs > 1 or masked_is or rows < 1:
        return 0
    if rows <= batch_size:
        return rows
    return batch_size if processes == 1 else 0


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> float:
    return float((values * mask).sum() / mask.sum().clamp(min=1))


def rollout_correction(
    prox: torch.Tensor, sampler: torch.Tensor, mask: torch.Tensor, correction: Correction
) -> tuple[torch.Tensor, torch.Tensor, dict[str, float]]:
    """The importance weights (proximal over sampler, truncated) and the mask left after rejection, per token, and
    the mismatch metrics under verl's names: the weights' mean and max (before truncation), the fraction truncated
    (`rollout_is_ratio_fraction_high`) or masked (`rollout_rs_masked_fraction`), and KL(sampler || trainer) by the
    k1 and k3 estimators on the sampled tokens."""
    log_ratio = (prox - sampler) * mask  # log pi_old / pi_rollout on sampled tokens, 0 elsewhere
    if correction.rollout_is == "sequence" or correction.rollout_rs == "sequence":
        per_sequence = torch.exp(log_ratio.sum(dim=-1, keepdim=True).clamp(-20, 20)).expand_as(mask)
    per_token = torch.exp(log_ratio.clamp(-20, 20))
    raw = per_sequence if correction.rollout_is == "sequence" else per_token
    weights = raw.clamp(max=correction.rollout_is_threshold) if correction.rollout_is else torch.ones_like(raw)
    kept = mask
    if correction.rollout_rs:
        judged = per_sequence if correction.rollout_rs == "sequence" else per_token
        high = correction.rollout_rs_threshold
        kept = mask * ((judged <= high) & (judged >= 1 / high)).float()
    tokens = mask.sum().clamp(min=1)
    stats = {
        "rollout_corr/rollout_is_mean": _masked_mean(raw, mask),
        "rollout_corr/rollout_is_max": float(raw[mask.bool()].max()) if mask.any() else 1.0,
        "rollout_corr/rollout_is_ratio_fraction_high": _masked_mean(
            (raw > correction.rollout_is_threshold).float(), mask
        )
        if correction.rollout_is
        else 0.0,
        "rollout_corr/rollout_rs_masked_fraction": float((mask - kept).sum() / tokens),
        "rollout_corr/kl": _masked_mean(sampler - prox, mask),
        "rollout_corr/k3_kl": _masked_mean(torch.exp(prox - sampler) - 1 - (prox - sampler), mask),
    }
    return weights * kept, kept, stats


def clipped_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_eps: float,
    weights: torch.Tensor | None = None,
    step_tokens: torch.Tensor | int | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO's clipped surrogate over sampled tokens, each times its importance weight (`weights`, 0 where masked;
    none in bypass mode), summed and divided by `step_tokens` (the tokens the whole optimiser step trains on when
    it is accumulated over several passes; default: this batch's `mask`); returns the loss and its diagnostics (means
    over this batch's tokens)."""
    ratio = torch.exp(logprobs - old_logprobs)
    adv = advantages.unsqueeze(1)
    surrogate = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip_eps, 1 + clip_eps) * adv)
    if weights is not None:
        surrogate = surrogate * weights.detach()
    tokens = mask.sum().clamp(min=1)
    loss = -(surrogate * mask).sum() / (tokens if step_tokens is None else step_tokens)
    with torch.no_grad():
        clipped = ((ratio - 1).abs() > clip_eps).float()
        stats = {
            "ratio_mean": float((ratio * mask).sum() / tokens),
            "ratio_max": float(ratio[mask.bool()].max()) if mask.any() else 1.0,
            "clip_fraction": float((clipped * mask).sum() / tokens),
            "logprob_gap": float(((logprobs - old_logprobs).abs() * mask).sum() / tokens),
        }
    return loss, stats


def add_fused_head(model) -> None:
    """Give the policy TRL's fused LM head (`model(..., labels=, fused_lm_head=True).log_probs`): patched on the
    transformers model under PEFT's wrapper, as TRL's GRPOTrainer does."""
    from peft import PeftModel
    from transformers import PreTrainedModel
    from trl.trainer.utils import add_fused_lm_head

    base = model.get_base_model() if isinstance(model, PeftModel) else model
    if not isinstance(base, PreTrainedModel):
        raise TypeError(f"the fused LM head needs a transformers model, got {type(base).__name__}")
    add_fused_lm_head(base)


def checkpointing_off(model) -> None:
    """Turn activation checkpointing off where an earlier iteration's Trainer turned it on (the Trainer enables it
    from its arguments but never disables it). transformers 5.23 names it `activation_checkpointing_disable`, the
    GPU images' 5.17 `gradient_checkpointing_disable`."""
    from peft import PeftModel

    if not any(getattr(module, "gradient_checkpointing", False) for module in model.modules()):
        return
    base = model.get_base_model() if isinstance(model, PeftModel) else model
    renamed = hasattr(base, "activation_checkpointing_disable")
    getattr(base, "activation_checkpointing_disable" if renamed else "gradient_checkpointing_disable")()


def first_sampled(completion_mask: torch.Tensor) -> int:
    """How many leading positions of the shifted [batch, length - 1] logprobs no row of the batch samples in: a turn's
    prompt, most of its tokens (every position when nothing is sampled)."""
    sampled = completion_mask[:, 1:].any(dim=0).nonzero()
    return int(sampled[0]) if len(sampled) else completion_mask.shape[1] - 1


def token_logprobs(
    model,
    ids: torch.Tensor,
    attention_mask: torch.Tensor,
    fused: bool,
    upcast: bool = False,
    completion_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """Log-probabilities of each sequence's own next tokens, [batch, length - 1]. Fused (a model given
    `add_fused_head`): float32, the LM head in tiles, so the [batch, length, vocabulary] logits (3.2 GB in float32
    for 8 x 2048 tokens of SmolLM2's 49,152-token vocabulary) and their gradient are never held; else the model's
    logits (cast to float32 first with `upcast`) through TRL's `selective_log_softmax`.

    Given the rows' `completion_mask`, the model's LM head runs only from the first sampled position on
    (transformers' `logits_to_keep`, as TRL's GRPO trainer asks it for its completions): the prompt before it, most
    of a turn, gets no logits, no log-softmax and no gradient through the head, and its logprobs are 0 (masked)."""
    if fused:
        labels = ids.masked_fill(attention_mask == 0, -100)
        return model(input_ids=ids, attention_mask=attention_mask, labels=labels, fused_lm_head=True).log_probs
    skip = 0 if completion_mask is None else first_sampled(completion_mask)
    logits = model(input_ids=ids, attention_mask=attention_mask, logits_to_keep=ids.shape[1] - skip).logits[:, :-1]
    kept = selective_log_softmax(logits.float() if upcast else logits, ids[:, 1 + skip :])
    return torch.nn.functional.pad(kept, (skip, 0)) if skip else kept


class RLTrainer(Trainer):
    """transformers' Trainer with the clipped policy-gradient loss on token-exact turns."""

    loss_is_scaled_for_ga = True  # compute_loss divides by the tokens the whole optimiser step trains on

    def __init__(
        self, *args, clip_eps: float = 0.2, correction: Correction | None = None, fused: bool = False, **kwargs
    ) -> None:
        super().__init__(*args, **kwargs)
        self.clip_eps = clip_eps
        self.correction = correction  # None: bypass mode
        self.fused = fused  # the policy has TRL's fused LM head (add_fused_head)
        self._diagnostics: dict[str, list[float]] = defaultdict(list)

    def _get_num_items_in_batch(self, batch_samples: list, device: torch.device) -> torch.Tensor:
        """The tokens the optimiser step's passes train on together (the Trainer's hook counts `labels`, which these
        rows do not have): the sampled ones, less those masked IS rejects (known before the step: it compares the
        stored proximal and sampler logprobs), so that the accumulated loss is one token mean over the step."""
        total = torch.zeros(())
        for batch in batch_samples:
            mask = batch["completion_mask"][:, 1:]
            if self.correction is not None and self.correction.rollout_rs:
                prox, sampler = batch["prox_logprobs"][:, 1:], batch["old_logprobs"][:, 1:]
                _, mask, _ = rollout_correction(prox, sampler, mask, self.correction)
            total = total + mask.sum()
        total = total.to(device)
        if self.args.average_tokens_across_devices and self.args.world_size > 1:
            # every process's share of the step divides by the whole step's tokens, as the Trainer's own count does
            total = self.accelerator.gather(total).sum()
        return total

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        """Log-probabilities of the sequence's own next tokens, then the clipped surrogate on the sampled ones:
        against the proximal logprobs, weighted by the rollout correction (decoupled), or against the sampler's
        (bypass); summed over this pass and divided by the tokens the whole step trains on."""
        logprobs = token_logprobs(
            model, inputs["input_ids"], inputs["attention_mask"], self.fused, completion_mask=inputs["completion_mask"]
        )
        sampler, mask = inputs["old_logprobs"][:, 1:], inputs["completion_mask"][:, 1:]
        step = None if num_items_in_batch is None else num_items_in_batch.clamp(min=1)
        if self.correction is not None:
            prox = inputs["prox_logprobs"][:, 1:]
            from_forward = prox.isnan()  # the first step's rows (`first_step_rows`): no parameter has moved yet
            if from_forward.any():
                if self.state.global_step > 0:
                    raise RuntimeError(
                        f"a row without proximal logprobs reached optimiser step {self.state.global_step + 1}, after "
                        "an update: only the first step's rows may take them from its own forward pass"
                    )
                prox = torch.where(from_forward, logprobs.detach(), prox)
            weights, mask, stats = rollout_correction(prox, sampler, mask, self.correction)
            loss, ppo = clipped_loss(logprobs, prox, inputs["advantages"], mask, self.clip_eps, weights, step)
            stats.update(ppo)
        else:
            loss, stats = clipped_loss(logprobs, sampler, inputs["advantages"], mask, self.clip_eps, step_tokens=step)
        for name, value in stats.items():
            self._diagnostics[name].append(value)
        if num_items_in_batch is not None and self.args.average_tokens_across_devices and self.args.world_size > 1:
            # DDP averages the processes' gradients, and each process's loss is its share of the whole step's token
            # mean: times the process count, as the Trainer's own compute_loss scales it
            loss = loss * self.accelerator.num_processes
        return loss

    def log(self, logs: dict[str, float], *args, **kwargs) -> None:
        """Add the means of the ratio's and the rollout correction's metrics since the last log to what the Trainer
        logs."""
        for name, values in self._diagnostics.items():
            if values and "loss" in logs:
                logs[name] = float(f"{sum(values) / len(values):.4g}")  # small KLs keep their digits
        if "loss" in logs:
            self._diagnostics.clear()
        super().log(logs, *args, **kwargs)


def proximal_logprobs(model, rows: list[Row], fused: bool = False) -> list[list[float]]:
    """The trainer's own logprobs of each row's tokens before the iteration's first update (aligned with
    `input_ids`; 0 at the first position and before the row's first sampled token, where nothing reads them): one
    forward pass a row, no gradient."""
    found = []
    with scoring(model):
        for row in rows:
            ids = torch.tensor([row.input_ids], device=model.device)
            sampled = torch.tensor([row.completion_mask], device=model.device)
            logprobs = token_logprobs(model, ids, torch.ones_like(ids), fused, upcast=True, completion_mask=sampled)
            found.append([0.0] + logprobs[0].tolist())
    return found


def as_dataset(rows: list[Row], prox: list[list[float] | None] | None = None):
    """The rows (and their proximal logprobs, in decoupled mode) as a `datasets.Dataset` the Trainer can shuffle
    and batch; a row whose proximal logprobs are None gets NaN ones, which the first step's forward pass fills
    (`first_step_rows`)."""
    from datasets import Dataset

    if prox is not None:
        prox = [p if p is not None else [math.nan] * len(rows[i].input_ids) for i, p in enumerate(prox)]

    return Dataset.from_list(
        [
            {
                "input_ids": r.input_ids,
                "completion_mask": r.completion_mask,
                "old_logprobs": r.old_logprobs,
                "advantage": r.advantage,
                **({"prox_logprobs": prox[i]} if prox is not None else {}),
            }
            for i, r in enumerate(rows)
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
