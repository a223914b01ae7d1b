"""vLLM CPU's KV cache block size on an RL iteration's own model calls: rollout time and prefix-cache hits.

    .venv/bin/python bench/vllm_block_size.py [--blocks 128,32] [--in_flight 16]
                                              [--calls bench/data/rl_iteration_calls.json] [--out [PATH]]

vLLM reuses a cached prefix only in whole KV cache blocks, and its CPU build's default block is 128 tokens. An agent's
next turn sends its whole conversation again: with 128-token blocks up to 127 tokens of it are recomputed on every
call, and the system prompt all of a task's rollouts share is cached only up to its last full block. Every call of
the demo's RL iteration is about 330 tokens, so that is a large share of what the rollout device computes.

For each block size in --blocks (the first is the baseline): starts vLLM CPU (.venv-vllm, SmolLM2-135M-Instruct) with
serve/vllm_server.start and `--block-size B`, pinned to core 0 (VLLM_CPU_OMP_THREADS_BIND=0 unless set), then
replays --calls: each episode's calls in order (its prompt token ids, a reply of its recorded length: `min_tokens` =
`max_tokens`, temperature 0.7, a fixed seed, logprobs as rollouts ask them), --in_flight episodes at once, after one
warm-up call that is not timed. The default calls are one `train rl` iteration recorded by bench/rl_async.py (16
episodes, 42 calls; bench/data/rl_iteration_calls.json says how); they are replayed on the base model, whose cost per
token is the adapter's less the LoRA matmuls, the same in every arm. Prints each block's wall time, prompt tokens,
prefix-cache hit rate (vLLM's /metrics, the timed calls only) and its speed-up over the first; exits 1 when the last
block is not faster than the first. Timings are only comparable on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
from pathlib import Path

import httpx
from results import add_out, free_port, machine, report

from loraloop.serve import vllm_server
from loraloop.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
MODEL = "SmolLM2-135M-Instruct"
CALLS = ROOT / "bench/data/rl_iteration_calls.json"


def prefix_cache(url: str) -> tuple[float, float]:
    """(hits, queries) of vLLM's prefix cache so far, in tokens, from its Prometheus metrics."""
    text = httpx.get(url.removesuffix("/v1") + "/metrics", timeout=30).text
    totals = []
    for name in ("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total"):
        totals.append(sum(float(v) for v in re.findall(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", text, re.M)))
    return totals[0], totals[1]


async def play(client: httpx.AsyncClient, url: str, calls: list[dict], seed: int) -> None:
    """One episode's calls, one after another, as its rollout made them."""
    for call in calls:
        length = max(1, call["completion_tokens"])
        answer = await client.post(
            f"{url}/completions",
            json={
                "model": MODEL,
                "prompt": call["prompt_token_ids"],
                "max_tokens": length,
                "min_tokens": length,
                "temperature": 0.7,
                "seed": seed,
                "logprobs": 1,
            },
            timeout=900,
        )
        answer.raise_for_status()


async def replay(url: str, episodes: list[list[dict]], in_flight: int) -> float:
    """Seconds to play every episode, `in_flight` at a time."""
    slots = asyncio.Semaphore(in_flight)

    async def episode(index: int, calls: list[dict]) -> None:
        async with slots:
            await play(client, url, calls, seed=index)

    async with httpx.AsyncClient() as client:
        started = time.perf_counter()
        await asyncio.gather(*(episode(i, calls) for i, calls in enumerate(episodes)))
        return time.perf_counter() - started


def measure(settings: Settings, episodes: list[list[dict]], in_flight: int) -> dict:
    """Start vLLM with the settings' KV block size on a free port, warm it with one call, replay the episodes; its
    figures."""
    port = free_port()
    started = time.perf_counter()
    url = vllm_server.start(settings, port=port, timeout=900)
    ready = time.perf_counter() - started
    try:
        asyncio.run(replay(url, [[{**episodes[0][0], "prompt_token_ids": [1, 2, 3]}]], 1))  # warm-up, not timed
        hits, queries = prefix_cache(url)
        seconds = asyncio.run(replay(url, episodes, in_flight))
        hits_after, queries_after = prefix_cache(url)
    finally:
        vllm_server.stop(port)
    return {
        "block": settings.vllm_block_size,
        "ready": ready,
        "seconds": seconds,
        "hit": (hits_after - hits) / max(1.0, queries_after - queries),
        "prompt": queries_after - queries,
    }


def main() -> int:
    """Replay the calls under each block size; print the table and the speed-up."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", default="128,32", help="block sizes, comma-separated; the first is the baseline")
    parser.add_argument("--in_flight", type=int, default=16, help="episodes played at once")
    parser.add_argument("--calls", type=Path, default=CALLS, help="the recorded calls (JSON: episodes of calls)")
    add_out(parser, "vllm_block_size")
    args = parser.parse_args()
    try:  # int() and the setting's own check (a positive multiple of 32), before any server starts
        arms = [Settings(base_model_name=MODEL, vllm_block_size=int(b)) for b in args.blocks.split(",")]
    except ValueError as exc:
        parser.error(f"--blocks {args.blocks!r}: {exc}")
    if len(arms) < 2:
        parser.error(f"--blocks {args.blocks!r}: two or more block sizes, the first the baseline")
    episodes = json.loads(args.calls.read_text())["episodes"]
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "0")
    runs = [measure(settings, episodes, args.in_flight) for settings in arms]
    calls = sum(len(e) for e in episodes)
    replies = sum(c["completion_tokens"] for e in episodes for c in e)
    lines = [
        f"{machine()}; vLLM CPU pinned to core(s) {os.environ['VLLM_CPU_OMP_THREADS_BIND']}, {MODEL}; "
        f"{len(episodes)} episodes ({calls} calls, {replies} reply tokens) from {args.calls.relative_to(ROOT)}, "
        f"{args.in_flight} in flight",
        "",
        "| --block-size | ready s | replay s | prompt tokens | prefix-cache hits | speed-up over the first |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['block']} | {r['ready']:.1f} | {r['seconds']:.1f} | {r['prompt']:.0f} | {r['hit']:.1%} | "
        f"{runs[0]['seconds'] / r['seconds']:.2f}x |"
        for r in runs
    ]
    report("\n".join(lines), args.out)
    return 0 if runs[-1]["seconds"] < runs[0]["seconds"] else 1


if __name__ == "__main__":
    sys.exit(main())
