"""The RL trainer's memory savers change nothing but memory: an optimiser step accumulated over one-turn passes
moves the LoRA weights as the same step taken in one pass does (the loss stays one token mean over the step),
and TRL's fused LM head gives the logprobs the model's full logits give. On a tiny random Llama with LoRA, trained
by plain SGD (Adam's first step is nearly sign(gradient) and would hide a wrong scale)."""

import pytest
import torch

from loraloop.train.rl_batch import Row
from loraloop.train.rl_trainer import (
    Correction,
    RLTrainer,
    add_fused_head,
    as_dataset,
    collate,
    proximal_logprobs,
    token_logprobs,
)

VOCAB = 97


def tiny_policy(fused: bool):
    """A 2-layer Llama of width 32 with LoRA on its attention, the same weights on every call."""
    from peft import LoraConfig, get_peft_model
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=True,
    )
    model = get_peft_model(
        LlamaForCausalLM(config),
        LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False),
    )
    if fused:
        add_fused_head(model)
    return model


def rows() -> list[Row]:
    """Four turns of different lengths and sampled spans (so a per-pass mean would weigh them differently), their
    sampler logprobs the policy's own moved by 0.05 or 0.3 in turn (masked IS at 1.2 keeps the first, drops the
    second)."""
    generator = torch.Generator().manual_seed(1)
    made = []
    for i, (length, sampled) in enumerate(((12, 3), (30, 20), (7, 2), (19, 9))):
        ids = torch.randint(0, VOCAB, (length,), generator=generator).tolist()
        mask = [0] * (length - sampled) + [1] * sampled
        made.append(Row(ids, mask, [0.0] * length, advantage=(1.0, -0.5, 2.0, -1.5)[i], task_id=f"t{i}"))
    own = proximal_logprobs(tiny_policy(False), made)
    for row, logprobs in zip(made, own):
        row.old_logprobs = [
            (lp + (0.05, 0.3)[t % 2]) * m for t, (lp, m) in enumerate(zip(logprobs, row.completion_mask))
        ]
    return made


def trained_lora(tmp_path, micro: int, fused: bool, correction: Correction | None) -> dict[str, torch.Tensor]:
    """The LoRA weights after one SGD step over the four turns, in passes of `micro` turns."""
    from transformers import TrainingArguments

    model = tiny_policy(fused)
    batch = rows()
    prox = proximal_logprobs(model, batch, fused) if correction else None
    args = TrainingArguments(
        output_dir=str(tmp_path / f"out-{micro}-{fused}"),
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=len(batch) // micro,
        num_train_epochs=1,
        learning_rate=0.5,
        lr_scheduler_type="constant",
        report_to=[],
        save_strategy="no",
        use_cpu=True,
        remove_unused_columns=False,
        disable_tqdm=True,
    )
    optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.5)
    trainer = RLTrainer(
        model=model,
        args=args,
        train_dataset=as_dataset(batch, prox),
        data_collator=lambda b: collate(b, 0),
        optimizers=(optimizer, None),
        correction=correction,
        fused=fused,
    )
    trainer.train()
    assert trainer.state.global_step == 1
    return {name: p.detach().clone() for name, p in model.named_parameters() if "lora_" in name}


@pytest.mark.parametrize(
    "correction",
    [Correction("token", 2.0), Correction(None, 2.0, "token", 1.2), None],
    ids=["decoupled", "masked-is", "bypass"],
)
def test_one_turn_passes_accumulate_to_the_step_of_one_whole_pass(tmp_path, correction):
    whole = trained_lora(tmp_path, micro=4, fused=False, correction=correction)
    start = {n: p.detach() for n, p in tiny_policy(False).named_parameters() if "lora_" in n}
    for micro, fused in ((1, False), (2, True)):
        parts = trained_lora(tmp_path, micro=micro, fused=fused, correction=correction)
        assert any(not torch.allclose(parts[n], start[n]) for n in start), "the step moved nothing"
        for name in whole:
            torch.testing.assert_close(parts[name], whole[name], rtol=1e-4, atol=1e-6, msg=f"{name}, micro {micro}")


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
