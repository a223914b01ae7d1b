"""Load the base model with LoRA: unsloth on CUDA when installed, else transformers + PEFT."""

from __future__ import annotations

from loraloop.hardware import choose_dtype
from loraloop.settings import get_settings
from loraloop.train.config import LoraTrainConfig


def use_unsloth() -> bool:
    """True on a CUDA machine with unsloth installed (it raises at import without a GPU)."""
    import torch

    if not torch.cuda.is_available():
        return False
    try:
        import unsloth  # noqa: F401
    except ImportError:
        return False
    return True


def train_dtype() -> str:
    """The dtype training loads the base model in: LORALOOP_DTYPE, or for auto bfloat16 on a CUDA GPU that
    supports it and on a CPU with native bfloat16 (AVX512-BF16, AMX), else float32 (faster where
    bfloat16 would be emulated)."""
    import torch

    bf16 = torch.cuda.is_bf16_supported() if torch.cuda.is_available() else None
    return choose_dtype(get_settings().dtype, bf16=bf16)


def limit_gpu_memory() -> float | None:
    """Cap this process's share of the GPU's memory at LORALOOP_TRAIN_GPU_FRACTION, so that training beside
    a vLLM on the same GPU fails with an out-of-memory error of its own instead of starving vLLM; return
    the cap (None: no GPU or no cap)."""
    import torch

    fraction = get_settings().train_gpu_fraction
    if fraction is None or not torch.cuda.is_available():
        return None
    torch.cuda.set_per_process_memory_fraction(fraction)
    return fraction


def load_model(cfg: LoraTrainConfig):
    """Return (model, tokenizer, peft_config): peft_config is None when the model already has LoRA."""
    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer

    limit_gpu_memory()
    if use_unsloth():
        from unsloth import FastLanguageModel

        model, tokenizer = FastLanguageModel.from_pretrained(
            cfg.base_model, max_seq_length=cfg.max_length, load_in_4bit=cfg.load_in_4bit
        )
        model = FastLanguageModel.get_peft_model(
            model,
            r=cfg.lora_r,
            lora_alpha=cfg.lora_alpha,
            lora_dropout=cfg.lora_dropout,
            target_modules=cfg.target_modules,
            random_state=cfg.seed,
        )
        return model, tokenizer, None
    dtype = getattr(torch, train_dtype())
    tokenizer = AutoTokenizer.from_pretrained(cfg.base_model)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(cfg.base_model, dtype=dtype)
    peft_config = LoraConfig(
        r=cfg.lora_r,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=cfg.lora_dropout,
        target_modules=cfg.target_modules,
        task_type="CAUSAL_LM",
    )
    return model, tokenizer, peft_config
