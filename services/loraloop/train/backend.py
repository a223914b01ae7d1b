"""Load the base model with LoRA: unsloth on CUDA when installed, else transformers + PEFT (`--backend`)."""

from __future__ import annotations

import importlib.util
import os

from loraloop.errors import ConfigError
from loraloop.hardware import choose_dtype
from loraloop.settings import get_settings
from loraloop.train.config import LoraTrainConfig

BACKENDS = ("auto", "unsloth", "peft")
NAMES = {"unsloth": "unsloth", "peft": "trl+peft"}  # as training_metrics.json names them


def resolve_backend(asked: str) -> str:
    """The backend a run uses: unsloth or peft. auto is unsloth on a CUDA machine where it is installed, else
    peft; unsloth asked for where it cannot run is a ConfigError before any model is loaded (unsloth raises at
    import without a GPU, and would otherwise fail deep in its patching)."""
    if asked not in BACKENDS:
        raise ConfigError(f"--backend: {asked!r} is not one of {', '.join(BACKENDS)}")
    if asked == "peft":
        return "peft"
    import torch

    cuda = torch.cuda.is_available()
    # unsloth's model patching imports bitsandbytes even for 16-bit LoRA (unsloth_zoo/patching_utils.py): without it
    # the import succeeds and loading the model fails (seen on an H100, bench/results/gpu.md)
    missing = [name for name in ("unsloth", "bitsandbytes") if importlib.util.find_spec(name) is None]
    if asked == "unsloth" and not cuda:
        raise ConfigError("--backend unsloth needs a CUDA GPU, and torch sees none: use --backend peft (TRL+PEFT)")
    if asked == "unsloth" and missing:
        raise ConfigError(
            f"--backend unsloth: {' and '.join(missing)} not installed here (the loraloop/trainer image has them)"
        )
    return "unsloth" if cuda and not missing else "peft"


def train_dtype() -> str:
    """The dtype training loads the base model in: LORALOOP_DTYPE, or for auto bfloat16 on a CUDA GPU that
    supports it and on a CPU with native bfloat16 (AVX512-BF16, AMX), else float32 (faster where
    bfloat16 would be emulated)."""
    import torch

    bf16 = torch.cuda.is_bf16_supported() if torch.cuda.is_available() else None
    return choose_dtype(get_settings().dtype, bf16=bf16)


def check_gpu_processes(local_processes: int, gpus: int) -> None:
    """Refuse more training processes on this machine (accelerate's --num_processes, LOCAL_WORLD_SIZE) than it has
    GPUs (TRAIN_GPUS reserves them in compose.train.yaml): two processes would share a card and run out of memory
    halfway through loading. Only on CUDA: on the CPU several processes share its cores (gloo)."""
    if gpus and local_processes > gpus:
        raise ConfigError(
            f"{local_processes} training processes on this machine (accelerate's --num_processes or its config's "
            f"num_processes) but {gpus} GPU(s) visible (TRAIN_GPUS, CUDA_VISIBLE_DEVICES): launch at most {gpus}"
        )


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
    """Return (model, tokenizer, peft_config) through `cfg.backend`: peft_config is None when the model already has
    LoRA (unsloth's `get_peft_model`, which patches its own kernels in)."""
    import torch
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer

    backend = resolve_backend(cfg.backend)
    if torch.cuda.is_available():
        check_gpu_processes(int(os.environ.get("LOCAL_WORLD_SIZE", "1")), torch.cuda.device_count())
    if cfg.load_in_4bit and backend != "unsloth":
        raise ConfigError("--load_in_4bit needs the unsloth backend (CUDA): TRL+PEFT here loads the base in full")
    limit_gpu_memory()
    if backend == "unsloth":
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
