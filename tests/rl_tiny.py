"""A tiny random Llama with LoRA, four turns of hand-made RL rows and one SGD step of the RL trainer on them: what
the RL step tests share (tests/unit/test_rl_step_memory.py) and what `accelerate launch` runs in two processes
(tests/integration/train/test_multiprocess.py): `python -m tests.rl_tiny OUT MICRO` saves the LoRA weights after
the step (rank 0) to OUT, the step's proximal logprobs taken from its own forward pass as `train rl` takes them.
Plain SGD: Adam's first step is nearly sign(gradient) and would hide a wrong scale."""

import os
import sys
from pathlib import Path

import torch

from loraloop.train.rl_batch import Row
from loraloop.train.rl_trainer import (
    Correction,
    RLTrainer,
    add_fused_head,
    as_dataset,
    collate,
    first_step_rows,
    proximal_logprobs,
    step_layout,
    world_size,
)

VOCAB = 97


def tiny_llama(vocab_size: int = VOCAB):
    """A 2-layer random Llama of width 32, the same weights on every call (seed 0)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        tie_word_embeddings=True,
    )
    return LlamaForCausalLM(config)


def tiny_policy(fused: bool):
    """`tiny_llama` with LoRA on its attention, the same weights on every call."""
    from peft import LoraConfig, get_peft_model

    model = get_peft_model(
        tiny_llama(), LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
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


def trained_lora(
    tmp_path,
    micro: int,
    fused: bool,
    correction: Correction | None,
    checkpointing: bool = False,
    steps: int = 1,
    from_forward: int = 0,
    model=None,
) -> dict[str, torch.Tensor]:
    """The LoRA weights after one SGD step over the four turns (or `steps` steps, in order), in passes of `micro`
    turns, shared by the processes of `accelerate launch` as `train rl` shares them (`step_layout`; one process when
    not launched); with `checkpointing`, activations recomputed in the backward pass as `train rl
    --activation_checkpointing` does; the first `from_forward` turns with no proximal pass (their first step's
    forward pass gives them, as `first_step_rows` allows)."""
    from transformers import TrainingArguments

    model = tiny_policy(fused) if model is None else model
    batch = rows()
    prox: list | None = None
    if correction:
        prox = [None] * from_forward + proximal_logprobs(model, batch[from_forward:], fused)
    layout = step_layout(len(batch) // steps, micro, world_size())
    assert layout is not None, (len(batch), micro, world_size())
    args = TrainingArguments(
        output_dir=str(tmp_path / f"out-{micro}-{fused}-{checkpointing}"),
        gradient_checkpointing=checkpointing,
        gradient_checkpointing_kwargs={"use_reentrant": False},
        per_device_train_batch_size=layout[0],
        gradient_accumulation_steps=layout[1],
        num_train_epochs=1,
        train_sampling_strategy="sequential",  # the turns in order, as `train rl` gives them (shuffled before)
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
    assert trainer.state.global_step == steps
    return {name: p.detach().clone() for name, p in model.named_parameters() if "lora_" in name}


if __name__ == "__main__":
    out, micro = Path(sys.argv[1]), int(sys.argv[2])
    # the proximal logprobs as `train rl` takes them: the rows of the first (here the only) step from its forward pass
    first = first_step_rows(4, 4, epochs=1.0, processes=world_size(), masked_is=False)
    weights = trained_lora(
        out.parent, micro=micro, fused=False, correction=Correction("token", 2.0), from_forward=first
    )
    if int(os.environ.get("RANK", "0")) == 0:
        torch.save(weights, out)
