"""What an RL iteration costs here, and how fast a new adapter version is served, against a vLLM restart.

    .venv/bin/python bench/rl.py [--iterations 2] [--tasks 4] [--rollouts 4] [--swaps 8] [--restarts 2] [--out [PATH]]

1. Starts vLLM CPU (SmolLM2-135M-Instruct, volumes/models) on a free port, makes the demo's BC warm start
   (--bc_epochs on the teacher episodes of its three families; the base model never solves a task, so RL
   from it would have nothing to train on; not timed) and runs `loraloop train rl` (rl_loop.run_rl)
   from it for --iterations on the families' train variants, --tasks tasks x --rollouts rollouts per
   iteration at temperature 0.7, held-out evaluation off, into a store under a temporary folder.
   Prints each iteration's seconds per phase (rollout, train, publish) and training tokens/s (every
   token of every row: the forward pass's cost).
2. Adapter swap, the loop's way: publishes the run's adapter --swaps more times (each a new version
   `<name>-v<k>`, loaded at runtime and verified, as every publish is) and times from the publish call
   to the first chat request answered by the new version; p50 and p95 against the 2 s target, and the
   publish's own stages (upload, download, load, verify: `publish_s` in the version's metadata).
3. Baseline, the HALO seed's way: stops vLLM and starts it again with the adapter on its command line
   (`--lora-modules`), timed to the first request answered by it, --restarts times.
Prints the ratio restart / swap (p50s). Exits 1 when a swap is not faster than a restart.

Timings are only comparable on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

import httpx
from results import add_out, free_port, local_settings, percentile, report, rl_from_warm_start

from loraloop.orchestrator import demo_plan, run_rl, run_turn
from loraloop.serve import vllm_server
from loraloop.serve.publish import publish
from loraloop.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
MODEL = "SmolLM2-135M-Instruct"
SWAP_TARGET_S = 2.0


def answered(url: str, model: str) -> None:
    """Send one short chat request to `model`; raise unless it is answered."""
    reply = httpx.post(
        f"{url}/chat/completions",
        timeout=300,
        json={"model": model, "messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4, "temperature": 0},
    )
    reply.raise_for_status()


def swap_seconds(settings: Settings, adapter_dir: Path, name: str, stages: list[dict]) -> float:
    """Publish the adapter as a new version and time it until that version answers a request; the publish's own
    breakdown (upload, download, load, verify) goes into `stages`."""
    started = time.perf_counter()
    metadata = publish(settings, adapter_dir, name)
    answered(settings.vllm_url, metadata["served_name"])
    stages.append(metadata["publish_s"])
    return time.perf_counter() - started


def restart_seconds(settings: Settings, adapter_dir: Path, port: int) -> float:
    """Stop vLLM, start it with the adapter on its command line, and time it until the adapter answers."""
    vllm_server.stop(port)
    started = time.perf_counter()
    url = vllm_server.start(
        settings, port=port, timeout=900, extra_args=["--lora-modules", f"restarted={adapter_dir.resolve()}"]
    )
    answered(url, "restarted")
    return time.perf_counter() - started


def main() -> int:
    """Run the loop, the swaps and the restarts; print the tables and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--rollouts", type=int, default=4)
    parser.add_argument("--swaps", type=int, default=8)
    parser.add_argument("--restarts", type=int, default=2)
    parser.add_argument("--bc_epochs", type=float, default=0.6, help="epochs of the BC warm start RL starts from")
    add_out(parser, "rl")
    args = parser.parse_args()
    os.chdir(ROOT)
    work = Path(tempfile.mkdtemp(prefix="bench-rl-"))
    port = free_port()
    settings = local_settings(work, port, MODEL)
    vllm_server.start(settings, port=port, timeout=900)
    try:
        plan = replace(demo_plan(epochs=args.bc_epochs), seeds=(1,))
        with ExitStack() as server:  # the warm start (the base model never solves a task: nothing to learn from)
            run_turn(settings, work / "bc", plan, 1, server)
        result = run_rl(
            rl_from_warm_start(plan, settings, work / "bc", args, adapter_name="bench"),
            plan.eval_settings(settings),
        )
        rows = [r for r in result["history"] if r["iteration"] > 0]
        adapter_dir = work / "bc" / "rl" / "adapter"  # the last version trained; the warm start when none was
        adapter_dir = adapter_dir if adapter_dir.is_dir() else work / "bc" / "bc_lora"
        stages: list[dict] = []
        swaps = [swap_seconds(settings, adapter_dir, "bench", stages) for _ in range(args.swaps)]
        restarts = [restart_seconds(settings, adapter_dir, port) for _ in range(args.restarts)]
    finally:
        vllm_server.stop(port)
    lines = [
        f"{os.cpu_count()} CPUs; {args.tasks} tasks x {args.rollouts} rollouts per iteration on "
        f"the demo families' train variants from a BC warm start, SmolLM2-135M-Instruct, vLLM CPU",
        "",
        "| iteration | episodes | rows | tokens | rollout s | train s | publish s | train tokens/s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['iteration']} | {r['episodes']} | {r['rows']} | {r['tokens']} | {r['rollout_s']} | "
        f"{r['train_s']} | {r['publish_s']} | {r.get('train_tokens_per_s', '-')} |"
        for r in rows
    ]
    swap50, restart50 = percentile(swaps, 50) / 1000, percentile(restarts, 50) / 1000
    lines += [
        "",
        "| adapter to serving | runs | p50 s | p95 s |",
        "|---|---:|---:|---:|",
        f"| publish a version (runtime load + verify) | {len(swaps)} | {swap50:.2f} | "
        f"{percentile(swaps, 95) / 1000:.2f} |",
        f"| restart vLLM with --lora-modules | {len(restarts)} | {restart50:.1f} | "
        f"{percentile(restarts, 95) / 1000:.1f} |",
        "",
        "| a publish's stages | p50 s | p95 s |",
        "|---|---:|---:|",
        *(
            f"| {stage} | {percentile([t[stage] for t in stages], 50) / 1000:.2f} | "
            f"{percentile([t[stage] for t in stages], 95) / 1000:.2f} |"
            for stage in ("upload", "download", "load", "verify")
        ),
        "",
        f"- restart / swap (p50): {restart50 / swap50:.1f}x",
        f"- target, publish to the first answer by the new version p50 <= {SWAP_TARGET_S:.0f} s (issue #30): "
        + ("met" if swap50 <= SWAP_TARGET_S else "**missed**"),
    ]
    report("\n".join(lines), args.out)
    return 0 if swap50 < restart50 else 1


if __name__ == "__main__":
    sys.exit(main())
