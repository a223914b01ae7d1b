"""The RL trainer's memory savers change nothing but memory: an optimiser step accumulated over one-turn passes
moves the LoRA weights as the same step taken in one pass does (the loss stays one token mean over the step), so
does one with activation checkpointing (activations recomputed in the backward pass), and TRL's fused LM head
gives the logprobs the model's full logits give. On a tiny random Llama with LoRA, trained by plain SGD (Adam's
first step is nearly sign(gradient) and would hide a wrong scale)."""

import pytest
import torch

from loraloop.train.rl_trainer import (
    Correction,
    RLTrainer,
    as_dataset,
    checkpointing_off,
    collate,
    proximal_logprobs,
    token_logprobs,
)
from tests.rl_tiny import rows, tiny_policy, trained_lora


@pytest.mark.parametrize(
    "correction",
    [Correction("token", 2.0), Correction(None, 2.0, "token", 1.2), None],
    ids=["decoupled", "masked-is", "bypass"],
)
def test_one_turn_passes_accumulate_to_the_step_of_one_whole_pass(tmp_path, correction):
    whole = trained_lora(tmp_path, micro=4, fused=False, correction=correction)
    start = {n: p.detach() for n, p in tiny_policy(False).named_parameters() if "lora_" in n}
    for micro, fused, checkpointing in ((1, False, False), (2, True, False), (1, False, True)):
        parts = trained_lora(tmp_path, micro=micro, fused=fused, correction=correction, checkpointing=checkpointing)
        assert any(not torch.allclose(parts[n], start[n]) for n in start), "the step moved nothing"
        for name in whole:
            torch.testing.assert_close(parts[name], whole[name], rtol=1e-4, atol=1e-6, msg=f"{name}, micro {micro}")


def test_checkpointing_an_iteration_turned_on_is_turned_off_for_the_next(tmp_path):
    """The Trainer turns activation checkpointing on from its arguments and never off, and `train rl` keeps one model
    across iterations: after a long iteration's step checkpointed, `checkpointing_off` leaves no layer checkpointing
    (a second call is a no-op), and the next step still moves the LoRA weights."""
    model = tiny_policy(False)

    def checkpointing_layers() -> int:
        return sum(bool(getattr(m, "gradient_checkpointing", False)) for m in model.modules())

    trained_lora(tmp_path, micro=4, fused=False, correction=None, checkpointing=True, model=model)
    assert checkpointing_layers() > 0, "the Trainer did not turn checkpointing on"
    checkpointing_off(model)
    assert checkpointing_layers() == 0
    checkpointing_off(model)
    assert checkpointing_layers() == 0
    before = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_" in n}
    after = trained_lora(tmp_path, micro=4, fused=False, correction=None, model=model)
    assert checkpointing_layers() == 0
    assert any(not torch.equal(after[n], before[n]) for n in before), "the step after moved nothing"


def test_the_fused_head_gives_the_logprobs_of_the_full_logits():
    ids = torch.tensor([r.input_ids[:7] for r in rows()])
    mask = torch.ones_like(ids)
    mask[1, 5:] = 0  # a padded row: fused scores pad positions as 0
    full = token_logprobs(tiny_policy(False), ids, mask, fused=False, upcast=True)
    fused = token_logprobs(tiny_policy(True), ids, mask, fused=True)
    assert fused.dtype == torch.float32 and fused.shape == full.shape == (4, 6)
    keep = mask[:, 1:].bool()
    torch.testing.assert_close(fused[keep], full[keep], rtol=1e-5, atol=1e-5)
    assert fused[1, 4:].abs().sum() == 0


def test_the_step_divides_by_the_tokens_masked_is_keeps(tmp_path):
    """With masked IS the step's mean is over the tokens it keeps, as in one pass before accumulation: the sampler
    logprobs moved by 0.3 (outside [1/1.2, 1.2]) are dropped from the count, those moved by 0.05 stay."""
    from transformers import TrainingArguments

    batch = rows()
    model = tiny_policy(False)
    prox = proximal_logprobs(model, batch)
    args = TrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True, remove_unused_columns=False)
    trainer = RLTrainer(
        model=model,
        args=args,
        train_dataset=as_dataset(batch, prox),
        data_collator=lambda b: collate(b, 0),
        correction=Correction(None, 2.0, "token", 1.2),
    )
    kept = sum(m for r in batch for t, m in enumerate(r.completion_mask) if m and t % 2 == 0)
    sampled = sum(sum(r.completion_mask) for r in batch)
    data = trainer.train_dataset
    passes = [collate([data[0]], 0), collate([data[i] for i in range(1, len(batch))], 0)]
    assert 0 < kept < sampled and int(trainer._get_num_items_in_batch(passes, torch.device("cpu"))) == kept
    trainer.correction = Correction("token", 2.0)  # weights, no mask: every sampled token counts
    assert int(trainer._get_num_items_in_batch(passes, torch.device("cpu"))) == sampled


def padded_batch(masks: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded ids, attention mask and completion mask of rows with these sampled spans, as `collate` pads."""
    generator = torch.Generator().manual_seed(2)
    width = max(len(m) for m in masks)
    ids = torch.randint(0, 97, (len(masks), width), generator=generator)
    attention = torch.tensor([[1] * len(m) + [0] * (width - len(m)) for m in masks])
    sampled = torch.tensor([m + [0] * (width - len(m)) for m in masks], dtype=torch.float32)
    return ids, attention, sampled


@pytest.mark.parametrize(
    "masks",
    [
        [[0] * 9 + [1] * 3],  # one turn: prompt, then its reply
        [[0] * 4 + [1] * 2 + [0] * 5 + [1] * 4],  # two turns packed, the observation between them masked
        [[0] * 3 + [1] * 2, [0] * 11 + [1] * 6, [0] * 7 + [1] * 1 + [0] * 2],  # a padded batch, each its own start
        [[0, 1, 1, 1]],  # sampled from the second token on: nothing to skip
        [[0] * 6],  # nothing sampled: nothing to score
    ],
    ids=["one-turn", "packed", "padded-batch", "from-the-start", "none-sampled"],
)
def test_logits_from_the_first_sampled_token_give_the_full_logits_logprobs_and_gradient(masks):
    """The LM head run only from the batch's first sampled position (`logits_to_keep`) changes no logprob the loss
    reads and no gradient: the same values on every sampled position, 0 before the first, and the same LoRA
    gradient of a masked sum."""
    ids, attention, sampled = padded_batch(masks)
    grads = []
    for completion_mask in (None, sampled):
        model = tiny_policy(False)
        logprobs = token_logprobs(model, ids, attention, fused=False, completion_mask=completion_mask)
        assert logprobs.shape == (len(masks), ids.shape[1] - 1)
        if completion_mask is None:
            full = logprobs.detach()
        else:
            on = sampled[:, 1:].bool()
            torch.testing.assert_close(logprobs.detach()[on], full[on], rtol=1e-5, atol=1e-6)
            before = min((m.index(1) - 1 for m in masks if 1 in m), default=ids.shape[1] - 1)
            assert logprobs.detach()[:, :before].abs().sum() == 0
        if sampled.any():
            (logprobs * sampled[:, 1:]).sum().backward()
        grads.append({n: p.grad for n, p in model.named_parameters() if "lora_" in n and p.grad is not None})
    assert grads[0].keys() == grads[1].keys()
    for name in grads[0]:
        torch.testing.assert_close(grads[1][name], grads[0][name], rtol=1e-5, atol=1e-7)
