"""What asking vLLM for token ids and logprobs costs: requests/s with and without, same prompts, one run.

    .venv/bin/python bench/token_trace.py [--url http://127.0.0.1:8000/v1] [--requests 24] [--in_flight 8]
                                          [--max_tokens 64] [--rounds 3]

Every model request of a rollout asks for `logprobs` and `return_token_ids` (agents/policy.py), so that
the RL loop trains on the tokens vLLM sampled. This sends the same second-turn shell prompts as
bench/vllm_dtype.py, `--in_flight` at a time, temperature 0 and a fixed seed, plain and traced in
alternating rounds (after one untimed warm-up each), to the vLLM at --url or to one it starts (CPU,
SmolLM2-135M-Instruct, on a free port). Prints requests/s of both and the overhead, and whether the
outputs are identical.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from loraloop.serve import vllm_server
from loraloop.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vllm_dtype import MODEL, ROOT, SEED, cpu_name, free_port, requests  # noqa: E402

TRACE = {"logprobs": True, "return_token_ids": True}


def ask(url: str, messages: list[dict[str, str]], max_tokens: int, trace: bool) -> dict:
    """One chat completion at temperature 0 with the fixed seed, with or without the trace fields."""
    reply = httpx.post(
        f"{url}/chat/completions",
        timeout=600,
        json={
            "model": MODEL,
            "messages": messages,
            "max_tokens": max_tokens,
            "temperature": 0,
            "seed": SEED,
            **(TRACE if trace else {}),
        },
    )
    reply.raise_for_status()
    return reply.json()


def timed(url: str, prompts: list, in_flight: int, max_tokens: int, trace: bool) -> tuple[float, list[str]]:
    """Seconds to answer every prompt, and the outputs."""
    started = time.perf_counter()
    with ThreadPoolExecutor(in_flight) as pool:
        answers = list(pool.map(lambda messages: ask(url, messages, max_tokens, trace), prompts))
    if trace and not all(a["choices"][0].get("token_ids") and a.get("prompt_token_ids") for a in answers):
        raise SystemExit(f"the server at {url} returned no token ids: not a vLLM that supports return_token_ids")
    return time.perf_counter() - started, [a["choices"][0]["message"]["content"] for a in answers]


def main() -> int:
    """Alternate plain and traced rounds on one server; print requests/s and the overhead."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=None, help="a running vLLM serving SmolLM2-135M-Instruct (default: start one)")
    parser.add_argument("--requests", type=int, default=24)
    parser.add_argument("--in_flight", type=int, default=8)
    parser.add_argument("--max_tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    os.chdir(ROOT)
    prompts = requests(args.requests)
    port = None if args.url else free_port()
    url = args.url or vllm_server.start(Settings(vllm_port=port, base_model_name=MODEL), port=port, timeout=900)
    try:
        ask(url, prompts[0], args.max_tokens, False)
        ask(url, prompts[0], args.max_tokens, True)
        seconds = {False: 0.0, True: 0.0}
        outputs = {}
        for _ in range(args.rounds):
            for trace in (False, True):
                took, outputs[trace] = timed(url, prompts, args.in_flight, args.max_tokens, trace)
                seconds[trace] += took
    finally:
        if port:
            vllm_server.stop(port)
    total = args.requests * args.rounds
    plain, traced = total / seconds[False], total / seconds[True]
    print(
        f"{cpu_name()}, {os.cpu_count()} CPUs; {args.requests} requests x {args.rounds} rounds each, "
        f"{args.in_flight} in flight, max_tokens {args.max_tokens}\n"
        f"plain:  {plain:.2f} requests/s ({seconds[False]:.1f} s)\n"
        f"traced: {traced:.2f} requests/s ({seconds[True]:.1f} s)  logprobs + return_token_ids\n"
        f"overhead: {(seconds[True] / seconds[False] - 1) * 100:+.1f}% time; identical outputs: "
        f"{sum(a == b for a, b in zip(outputs[False], outputs[True]))}/{args.requests}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
