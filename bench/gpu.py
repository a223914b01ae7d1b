"""Training throughput on one GPU: unsloth against TRL+PEFT, for BC and for RL optimiser steps (issue #31 item 6).

    python bench/gpu.py [--model qwen3-1.7b] [--backends peft,unsloth] [--bc_rows 256] [--tokens 1024]
                        [--rl_steps 4] [--out [PATH]]

The model is a Qwen3 architecture at a real size (qwen3-1.7b, qwen3-4b) with random weights, since no weights can be
downloaded where this runs, and SmolLM2's tokenizer (volumes/models/SmolLM2-135M-Instruct, or --tokenizer): its ids
fall inside Qwen3's vocabulary, and throughput does not depend on what the weights are. qwen3-tiny (2 layers) lets the
script itself be checked on a CPU in seconds.

Each measurement runs in a process of its own, through the project's own trainers, with `--backend` set:
- bc: `train_bc` (TRL's SFTTrainer, LoRA r 16 on every projection), --bc_rows rows of --tokens tokens each (half
  prompt, half completion), one epoch, batch 8: tokens/s as training_metrics.json records it (the trainer's
  `train()` call, its first step included);
- rl: `RLRun.load_policy` and `RLRun.train`, as `loraloop train rl` runs them: --rl_steps optimiser steps of 8 turns
  of --tokens tokens (the last half sampled), decoupled mode (the proximal pass, then the steps): tokens/s.
Both also give the seconds and the GPU's peak memory (torch.cuda.max_memory_allocated). unsloth runs in its own
process because importing it patches transformers and TRL for the whole process.

Prints a Markdown table and unsloth's tokens/s over TRL+PEFT's measured in the same run. A backend that cannot run
here (unsloth without CUDA or not installed) is a row saying why, not a figure. Serving figures (publish to first
answer, rollout throughput at 1/8/32 episodes) need vLLM's CUDA build beside it: bench/rl.py and bench/load.py
measure them against a served model; docs/gpu.md says how.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results import add_out, machine, report

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = ROOT / "volumes/models/SmolLM2-135M-Instruct"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json", "merges.txt")
# Qwen3's published configurations (Qwen/Qwen3-1.7B, Qwen/Qwen3-4B config.json); tiny checks the script on a CPU
QWEN3 = {
    "qwen3-1.7b": dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=28, num_attention_heads=16),
    "qwen3-4b": dict(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36, num_attention_heads=32),
    "qwen3-tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4),
}
BATCH = 8  # rows (bc) or turns (rl) per optimiser step


def make_model(name: str, folder: Path, tokenizer: Path) -> Path:
    """A Qwen3 model of `name`'s shape with random weights (seed 0), saved in the dtype training picks, with the
    tokenizer's files beside it."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen3Config

    from loraloop.train.backend import train_dtype

    shape = QWEN3[name]
    config = Qwen3Config(
        **shape,
        num_key_value_heads=min(8, shape["num_attention_heads"]),
        head_dim=128 if name != "qwen3-tiny" else 16,
        vocab_size=151936,
        max_position_embeddings=40960,
        rope_theta=1000000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):  # random init of billions of weights: on the GPU
        model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, train_dtype()))
    model.save_pretrained(folder)
    del model
    for file in TOKENIZER_FILES:
        if (tokenizer / file).is_file():
            shutil.copy(tokenizer / file, folder / file)
    return folder


def bc_rows(folder: Path, rows: int, tokens: int) -> Path:
    """A bc.jsonl of `rows` prompt/completion pairs of about tokens/2 tokens each (seeded words from the
    tokenizer's vocabulary)."""
    import random

    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    words = [w for w in tok.get_vocab() if w.isalpha() and len(w) > 3]
    rng = random.Random(0)

    def text(n: int) -> str:
        return " ".join(rng.choice(words) for _ in range(n))

    path = folder / "bc.jsonl"
    with path.open("w") as out:
        for _ in range(rows):
            out.write(json.dumps({"prompt": text(tokens // 4), "completion": text(tokens // 4)}) + "\n")
    return path


def gpu_peak_gib() -> float | None:
    """The GPU's peak allocated memory in this process, GiB (None without CUDA)."""
    import torch

    return torch.cuda.max_memory_allocated() / 2**30 if torch.cuda.is_available() else None


def run_bc(model: Path, backend: str, rows: int, tokens: int, work: Path) -> dict:
    """One epoch of `train_bc` over the bench's rows: tokens/s, seconds and peak GPU memory."""
    from loraloop.train.bc import train_bc
    from loraloop.train.config import BCConfig

    cfg = BCConfig(
        base_model=str(model),
        dataset_path=str(bc_rows(model, rows, tokens)),
        output_dir=str(work / f"bc-{backend}"),
        epochs=1.0,
        batch_size=BATCH,
        max_length=tokens,
        backend=backend,
        logging_steps=10,
    )
    started = time.perf_counter()
    metrics = train_bc(cfg)
    return {
        "backend": metrics["backend"],
        "tokens": metrics["train_tokens"],
        "tokens_per_s": metrics["tokens_per_s"],
        "seconds": time.perf_counter() - started,
        "gpu_gib": gpu_peak_gib(),
        "dtype": metrics["dtype"],
    }


def run_rl(model: Path, backend: str, steps: int, tokens: int, work: Path) -> dict:
    """`steps` RL optimiser steps of BATCH turns through `RLRun.train` (the proximal pass included)."""
    import torch

    from loraloop.rl_loop import RLRun
    from loraloop.settings import Settings
    from loraloop.train.backend import NAMES, resolve_backend
    from loraloop.train.config import RLConfig
    from loraloop.train.rl_batch import Row

    cfg = RLConfig(
        base_model=str(model),
        dataset_path="",
        output_dir=str(work / f"rl-{backend}"),
        batch_size=BATCH,
        max_length=tokens,
        backend=backend,
    )
    run = RLRun(cfg, Settings(store_url=f"file://{work / 'store'}"))  # nothing is stored: no publish
    run.load_policy(0)
    generator = torch.Generator().manual_seed(0)
    vocab = len(run.tokenizer)
    half = tokens // 2
    turns = [
        Row(
            torch.randint(0, vocab, (tokens,), generator=generator).tolist(),
            [0] * half + [1] * (tokens - half),
            [0.0] * half + [-1.0] * (tokens - half),
            advantage=1.0 if i % 2 else -1.0,
            task_id=f"t{i}",
        )
        for i in range(steps * BATCH)
    ]
    started = time.perf_counter()
    result = run.train(turns, len(turns) * tokens, iteration=0)
    seconds = time.perf_counter() - started
    assert result["steps"] == steps, result
    return {
        "backend": NAMES[resolve_backend(backend)],
        "tokens": len(turns) * tokens,
        "tokens_per_s": result["train_tokens_per_s"],  # the run's own figure, as `train rl` records it
        "seconds": seconds,
        "gpu_gib": gpu_peak_gib(),
        "dtype": str(run.model.dtype).removeprefix("torch."),
    }


def child(args: argparse.Namespace) -> dict:
    """One measurement (--child bc|rl) in this process; its figures, or why the backend cannot run here."""
    from loraloop.errors import ConfigError
    from loraloop.train.backend import resolve_backend

    try:
        resolve_backend(args.backend)
    except ConfigError as exc:
        return {"skipped": str(exc)}
    work = Path(args.work)
    if args.child == "bc":
        return run_bc(Path(args.model_dir), args.backend, args.bc_rows, args.tokens, work)
    return run_rl(Path(args.model_dir), args.backend, args.rl_steps, args.tokens, work)


def measure(args: argparse.Namespace, kind: str, backend: str, model_dir: Path, work: Path) -> dict:
    """One measurement in a process of its own: its figures, or the error that stopped it."""
    command = [sys.executable, __file__, "--child", kind, "--backend", backend, "--model_dir", str(model_dir)]
    command += ["--work", str(work), "--bc_rows", str(args.bc_rows), "--rl_steps", str(args.rl_steps)]
    proc = subprocess.run([*command, "--tokens", str(args.tokens)], capture_output=True, text=True)
    if proc.returncode:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        print("\n".join(lines[-40:]), file=sys.stderr)  # the whole reason, beside the table's last line of it
        return {"error": (lines or [f"exit {proc.returncode}"])[-1].strip()[:300]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def device_line() -> str:
    """The GPU (name, memory) and the torch/CUDA versions, or the CPU's name where there is none."""
    import torch

    if not torch.cuda.is_available():
        return f"no GPU (CPU), torch {torch.__version__}"
    props = torch.cuda.get_device_properties(0)
    return f"{props.name} ({props.total_memory / 2**30:.0f} GiB), torch {torch.__version__}, CUDA {torch.version.cuda}"


def versions() -> str:
    """The versions of the libraries the trainers run on (absent ones named so)."""
    from importlib.metadata import PackageNotFoundError, version

    found = []
    for name in ("transformers", "trl", "peft", "accelerate", "unsloth", "unsloth_zoo"):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            found.append(f"{name} absent")
    return ", ".join(found)


def row(kind: str, r: dict, base: dict | None) -> str:
    """A table row: the figures, or why there are none; the ratio over the same kind's TRL+PEFT row."""
    if "skipped" in r or "error" in r:
        return f"| {kind} | {r.get('backend', '-')} | - | - | - | - | {r.get('skipped') or 'failed: ' + r['error']} |"
    ratio = f"{r['tokens_per_s'] / base['tokens_per_s']:.2f}" if base and "tokens_per_s" in base else "-"
    gib = f"{r['gpu_gib']:.1f}" if r.get("gpu_gib") is not None else "-"
    return (
        f"| {kind} | {r['backend']} ({r['dtype']}) | {r['tokens']} | {r['seconds']:.1f} | {r['tokens_per_s']:.0f} | "
        f"{gib} | {ratio} |"
    )


def main() -> int:
    """Make the model, measure each backend for BC and RL, print the table; exit 1 when a measurement failed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(QWEN3), default="qwen3-1.7b")
    parser.add_argument("--backends", default="peft,unsloth", help="peft first: the baseline of the ratios")
    parser.add_argument("--bc_rows", type=int, default=256)
    parser.add_argument("--rl_steps", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=1024, help="tokens of a BC row or an RL turn")
    parser.add_argument("--tokenizer", type=Path, default=TOKENIZER)
    for hidden in ("--child", "--backend", "--model_dir", "--work"):
        parser.add_argument(hidden, help=argparse.SUPPRESS)
    add_out(parser, "gpu")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args)))
        return 0
    backends = args.backends.split(",")
    if backends[0] != "peft" or not set(backends) <= {"peft", "unsloth"}:
        parser.error("--backends: peft first (the baseline), then unsloth")
    if not (args.tokenizer / "tokenizer.json").is_file():
        parser.error(f"--tokenizer: no tokenizer.json in {args.tokenizer}")
    work = Path(tempfile.mkdtemp(prefix="gpu-bench-"))
    started = time.perf_counter()
    model_dir = make_model(args.model, work / args.model, args.tokenizer)
    print(f"model {args.model} made in {time.perf_counter() - started:.1f} s", file=sys.stderr, flush=True)
    lines = [
        f"# Training throughput: {args.model} (random weights) + LoRA r 16, unsloth against TRL+PEFT",
        "",
        f"{machine()}; {device_line()}; {versions()}.",
        f"Command: `python bench/gpu.py --model {args.model} --backends {args.backends} --bc_rows {args.bc_rows} "
        f"--rl_steps {args.rl_steps} --tokens {args.tokens}`.",
        "",
        "| stage | backend | tokens | seconds | tokens/s | GPU peak GiB | / TRL+PEFT | ",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    failed = False
    for kind in ("bc", "rl"):
        base = None
        for backend in backends:
            found = measure(args, kind, backend, model_dir, work)
            found.setdefault("backend", {"peft": "trl+peft"}.get(backend, backend))
            print(kind, backend, found, file=sys.stderr, flush=True)
            failed |= "error" in found
            base = found if backend == "peft" else base
            lines.append(row(kind, found, base if backend != "peft" else None))
    lines += [
        "",
        f"bc: one epoch of {args.bc_rows} rows of about {args.tokens} tokens, batch {BATCH} (TRL's SFTTrainer); "
        f"rl: {args.rl_steps} optimiser steps of {BATCH} turns of {args.tokens} tokens (`RLRun.train`, decoupled "
        "mode). Tokens/s includes each run's first step.",
    ]
    report("\n".join(lines), args.out)
    shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
