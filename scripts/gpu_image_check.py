"""The GPU images' smoke test, run at their build (no GPU there): the libraries import at the lock's versions
(constraints/gpu.txt, copied to /tmp/constraints.txt), and the entry points answer --help. unsloth refuses to import
without a GPU: the trainer's guard (`resolve_backend`) must say so in one line instead of loading anything.

    python gpu_image_check.py trainer|vllm"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import os
import subprocess
import sys

LIBS = {"trainer": ["torch", "transformers", "trl", "peft", "datasets", "accelerate"], "vllm": ["torch", "vllm"]}
COMMANDS = {
    "trainer": [["loraloop", "train", "--help"], ["loraloop", "train", "bc", "--help"]],
    "vllm": [[sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--help"]],
}
# what compose.yaml's vllm command and loraloop's publish rely on in this vLLM release
VLLM_FLAGS = ["--enable-lora", "--max-lora-rank", "--max-loras", "--gpu-memory-utilization", "--max-model-len",
              "--served-model-name", "--dtype", "--tensor-parallel-size"]  # fmt: skip
# vLLM's --help builds its device config, which fails where no GPU is found ("Failed to infer device type"): the
# check parses the flags with the platform named, as a build machine has no GPU
ENV = {**os.environ, "VLLM_TARGET_DEVICE": "cpu"}


def main(image: str) -> int:
    """Check `image`'s imports, versions and commands; print what was checked; exit 1 naming the first failure."""
    pins = dict(line.strip().split("==", 1) for line in open("/tmp/constraints.txt") if "==" in line and line[0] != "#")
    for lib in LIBS[image]:
        importlib.import_module(lib)
        found, pinned = md.version(lib).split("+")[0], pins[lib]
        if found != pinned:
            print(f"{image}: {lib} {found} is not the lock's {pinned}", file=sys.stderr)
            return 1
        print(f"{image}: {lib} {found}")
    for command in COMMANDS[image]:
        shown = subprocess.run(command, check=True, capture_output=True, text=True, env=ENV).stdout
        print(f"{image}: {' '.join(command[-3:])} answers")
    if image == "vllm":
        missing = [flag for flag in VLLM_FLAGS if flag not in shown]
        import vllm.envs

        if missing or not hasattr(vllm.envs, "VLLM_ALLOW_RUNTIME_LORA_UPDATING"):
            print(f"vllm: this release lacks {missing or 'VLLM_ALLOW_RUNTIME_LORA_UPDATING'}", file=sys.stderr)
            return 1
        print(f"vllm: {', '.join(VLLM_FLAGS)} and runtime LoRA updating are there")
    if image == "trainer":
        import torch

        from loraloop.errors import ConfigError
        from loraloop.train.backend import resolve_backend

        if not torch.cuda.is_available():
            try:
                resolve_backend("unsloth")
            except ConfigError as exc:
                print(f"trainer: without a GPU, --backend unsloth is refused: {exc}")
            else:
                print("trainer: --backend unsloth was not refused without a GPU", file=sys.stderr)
                return 1
            print(f"trainer: unsloth {md.version('unsloth')}, bitsandbytes {md.version('bitsandbytes')} installed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
