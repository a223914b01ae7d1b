"""Peak memory of one RL optimiser step, the way `loraloop train rl` takes it, against the step before the memory
savers (issue #30 item 4: at batch 8 x 2048 tokens, at most a third of the baseline).

    .venv/bin/python bench/rl_memory.py [--rows 8] [--tokens 1024,2048]
                                        [--variants before,fused,micro,both,ckpt,auto] [--out]

Each variant runs in a process of its own (peak RSS is a process's high-water mark): it loads the base model
(volumes/models/SmolLM2-135M-Instruct) with LoRA through `RLRun.load_policy`, makes --rows turns of --tokens
tokens (random ids, the last half sampled) and takes one optimiser step through `RLRun.train` in decoupled mode
(the turns' proximal logprobs from the step's own forward pass: one step, no proximal pass). Variants:

- before: the whole step in one forward pass, the model's full logits (the trainer before `micro_batch_size` and
  the fused head: `--micro_batch_size 8 --no-fused_logprobs`);
- fused: one pass, TRL's fused LM head;
- micro: passes of one turn accumulated, the model's logits, no activation checkpointing (the default until
  2026-11-29);
- both: passes of one turn and the fused head;
- ckpt: passes of one turn, full logits, activation checkpointing (`--activation_checkpointing`);
- auto: what `train rl` does unless told otherwise (DEFAULT): passes of one turn, full logits, activation
  checkpointing when a pass reaches `--activation_checkpointing_from` tokens (1,024 by default), so at 2,048
  tokens a turn `ckpt`, at 512 `micro`;
- pass: as micro, with a proximal pass over every turn before the step (`first_step_rows` made 0), as every step
  took before 05f9667 (2026-11-28): what the pass costs in seconds and at the peak (its logits are upcast).

Without the fused head, every variant's LM head runs from the first sampled position on (`logits_to_keep`, since
2026-11-28: here half of each turn; a real turn's prompt is most of it), so `before` is no longer quite the trainer
before the savers: its figure here is that, the one to compare with, in the entries before 2026-11-28 17:00.

Prints peak RSS after loading and after the step, the step's seconds and each variant's peak over the baseline's,
measured in the same run, per length. A variant the OOM killer stops is reported as such, with the memory that was
available when it started (its peak was above it: the ratio against it is a bound). Exits 1 when the default misses
the target (a third of the baseline's peak) at a length.
"""

from __future__ import annotations

import argparse
import json
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

from results import add_out, machine, report

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "volumes/models/SmolLM2-135M-Instruct"
# micro batch, fused head, activation checkpointing (no, yes or auto: by the pass's tokens), a proximal pass over
# every turn
VARIANTS = {
    "before": (8, False, "no", False),
    "fused": (8, True, "no", False),
    "micro": (1, False, "no", False),
    "both": (1, True, "no", False),
    "ckpt": (1, False, "yes", False),
    "pass": (1, False, "no", True),
    "auto": (1, False, "auto", False),
}
DEFAULT = "auto"  # what `train rl` does unless told otherwise
TARGET = 1 / 3


def peak_gib() -> float:
    """This process's peak resident memory so far, GiB (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def child(variant: str, rows: int, tokens: int) -> dict:
    """One variant's optimiser step in this process (`RLRun.load_policy` and `RLRun.train`, the run's own code):
    peak RSS after loading and after the step, the step's seconds (a proximal pass included where there is one) and
    whether the step checkpointed."""
    import tempfile

    import torch

    from loraloop import rl_loop
    from loraloop.rl_loop import RLRun, checkpointing_for
    from loraloop.settings import Settings
    from loraloop.train.config import RLConfig
    from loraloop.train.rl_batch import Row

    micro, fused, checkpointing, proximal_pass = VARIANTS[variant]
    if proximal_pass:  # the step before 05f9667: no row's proximal logprobs from the step's own forward pass
        rl_loop.first_step_rows = lambda *args, **kwargs: 0
    folder = Path(tempfile.mkdtemp(prefix="rl-memory-"))
    cfg = RLConfig(
        base_model=str(MODEL),
        dataset_path="",
        output_dir=str(folder / "run"),
        batch_size=rows,
        micro_batch_size=min(micro, rows),
        fused_logprobs=fused,
        activation_checkpointing=checkpointing == "yes",
        **({} if checkpointing == "auto" else {"activation_checkpointing_from": 0}),
    )
    run = RLRun(cfg, Settings(store_url=f"file://{folder / 'store'}"))  # the store is not written to
    run.load_policy(0)
    loaded = peak_gib()
    generator = torch.Generator().manual_seed(0)
    half = tokens // 2
    batch = [
        Row(
            torch.randint(0, 49152, (tokens,), generator=generator).tolist(),
            [0] * half + [1] * (tokens - half),
            [0.0] * half + [-1.0] * (tokens - half),
            advantage=1.0 if i % 2 else -1.0,
            task_id=f"t{i}",
        )
        for i in range(rows)
    ]
    started = time.perf_counter()
    result = run.train(batch, rows * tokens, iteration=0)
    assert result["steps"] == 1, result
    return {
        "loaded_gib": loaded,
        "peak_gib": peak_gib(),
        "step_s": time.perf_counter() - started,
        "checkpointed": checkpointing_for(cfg, batch),
    }


def available_gib() -> float:
    """Memory available to a new process now (MemAvailable), GiB: a variant the OOM killer stops needed more."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 2**20
    raise RuntimeError("/proc/meminfo has no MemAvailable")


def measure(variant: str, rows: int, tokens: int) -> dict:
    """One variant in a child process: its figures, or why it gave none (killed: peak above what was available)."""
    free = available_gib()
    proc = subprocess.run(
        [sys.executable, __file__, "--child", variant, "--rows", str(rows), "--tokens", str(tokens)],
        capture_output=True,
        text=True,
    )
    if proc.returncode == -signal.SIGKILL:
        return {"killed": True, "above_gib": free}
    if proc.returncode:
        errors = [line for line in proc.stderr.splitlines() if "Error" in line or "error" in line]
        return {"error": (errors or [f"exit {proc.returncode}"])[-1].strip()}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def row(variant: str, rows: int, tokens: int, r: dict, base: dict) -> str:
    """The table row of one variant at one length, its peak over the baseline's (a bound where that was killed)."""
    micro, fused, checkpointing, proximal_pass = VARIANTS[variant]
    yes = {True: "yes", False: "no"}
    if checkpointing == "auto":
        checkpointing = f"auto: {yes[r['checkpointed']]}" if "checkpointed" in r else "auto"
    head = f"| {tokens} | {variant} | {min(micro, rows)} | {yes[fused]} | {checkpointing} | {yes[proximal_pass]} |"
    if r.get("killed"):
        return f"{head} - | killed by the OOM killer: above {r['above_gib']:.1f} | | |"
    if "error" in r:
        return f"{head} - | failed: {r['error']} | | |"
    if base.get("killed"):
        ratio = f"< {r['peak_gib'] / base['above_gib']:.2f}"
    else:
        ratio = f"{r['peak_gib'] / base['peak_gib']:.2f}" if "peak_gib" in base else "-"
    return f"{head} {r['loaded_gib']:.2f} | {r['peak_gib']:.2f} | {ratio} | {r['step_s']:.1f} |"


def main() -> int:
    """Run each variant at each length in a process of its own and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=8, help="turns in the optimiser step")
    parser.add_argument("--tokens", default="1024,2048", help="tokens of each turn, one table part per length")
    parser.add_argument("--variants", default="before,fused,micro,both,ckpt,auto")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    add_out(parser, "rl_memory")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.rows, int(args.tokens))))
        return 0
    variants = args.variants.split(",")
    if variants[0] != "before" or any(v not in VARIANTS for v in variants):
        parser.error(f"--variants: names from {', '.join(VARIANTS)}, 'before' first (the baseline)")
    lengths = [int(t) for t in args.tokens.split(",")]
    lines = [
        f"# One RL optimiser step: peak memory ({args.rows} turns, SmolLM2-135M + LoRA r 16, decoupled mode)",
        "",
        f"{machine()}. Command: `.venv/bin/python bench/rl_memory.py --rows {args.rows} --tokens {args.tokens} "
        f"--variants {args.variants}`.",
        "",
        "| tokens a turn | variant | micro batch | fused head | activation checkpointing | proximal pass | "
        "peak RSS after load (GiB) | "
        "peak RSS after the step (GiB) | / before | step (s) |",
        "|---:|---|---:|---|---|---|---:|---:|---:|---:|",
    ]
    verdicts = []
    for tokens in lengths:
        found = {}
        for variant in variants:
            found[variant] = measure(variant, args.rows, tokens)
            print(tokens, variant, found[variant], file=sys.stderr, flush=True)
            lines.append(row(variant, args.rows, tokens, found[variant], found["before"]))
        base = found["before"]
        bound = base.get("above_gib") if base.get("killed") else base.get("peak_gib")
        for variant in [v for v in (DEFAULT, "ckpt") if "peak_gib" in found.get(v, {}) and bound]:
            met = found[variant]["peak_gib"] <= TARGET * bound
            over = "over " if base.get("killed") else ""
            who = "the default's" if variant == DEFAULT else f"{variant}'s"
            verdicts.append((tokens, who, met, f"{found[variant]['peak_gib']:.2f} GiB against {over}{bound:.1f}"))
    lines.append("")
    for tokens, who, met, figures in verdicts:
        lines.append(
            f"- target (issue #30 item 4), {tokens} tokens a turn: {who} peak at most a third of the "
            f"baseline's: {figures}: " + ("met" if met else "**missed**")
        )
    report("\n".join(lines), args.out)
    return 0 if verdicts and all(met for _, who, met, _ in verdicts if who == "the default's") else 1


if __name__ == "__main__":
    sys.exit(main())
