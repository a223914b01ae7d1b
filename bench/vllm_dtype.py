"""vLLM CPU in bfloat16 against float32 on the loop's own requests: wall time, tokens/s, same outputs?

    .venv/bin/python bench/vllm_dtype.py [--requests 24] [--in_flight 8] [--max_tokens 64] [--out]

Starts vLLM CPU (.venv-vllm, SmolLM2-135M-Instruct from volumes/models) with serve/vllm_server.start,
first with --dtype bfloat16, then with float32, each on its own free port and stopped before the next.
Both get the same chat requests, built as rollouts build them (kinds/prompts.build_messages with the
shell text protocol's instructions and one-shot example) for tasks of configs/tasks/os (sampled with
a fixed seed), each at its second turn: the scripted teacher's first command and its observation
(an empty output) are in the history. temperature 0, a fixed seed, --in_flight requests at a time,
after one warm-up request per server that is not timed. Prints the seconds vLLM took to start and to
answer the requests, completion tokens/s, the ratio and how many outputs are identical. Exits 1 when
float32 is not faster on a CPU without native bfloat16 (loraloop.hardware), the case the dtype choice
rests on.

Timings are only comparable on an otherwise idle machine: other processes on the same CPUs slow one
run more than the other.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
from results import add_out, free_port, report

from loraloop.envs.shell.protocol import EMPTY_OUTPUT, INSTRUCTIONS, ONE_SHOT, task_prompt
from loraloop.envs.shell.teacher import ScriptedTeacher
from loraloop.hardware import cpu_flags, cpu_has_bf16
from loraloop.kinds.prompts import build_messages
from loraloop.serve import vllm_server
from loraloop.settings import Settings
from loraloop.task_registry import load_registry

ROOT = Path(__file__).resolve().parents[1]
REGISTRY, MODEL, SEED = "configs/tasks/os", "SmolLM2-135M-Instruct", 1234


@dataclass
class Run:
    """One server's answers to the request set."""

    dtype: str
    start_s: float
    seconds: float
    prompt_tokens: int
    completion_tokens: int
    outputs: list[str]

    @property
    def tokens_per_s(self) -> float:
        return self.completion_tokens / self.seconds


def requests(count: int) -> list[list[dict[str, str]]]:
    """`count` second-turn chat prompts for shell tasks: task, teacher's first command, its observation."""
    tasks = [t for t in load_registry(REGISTRY).select() if t.example is not None]
    if len(tasks) < count:
        raise SystemExit(f"{REGISTRY} has {len(tasks)} tasks with an example solution, fewer than --requests {count}")
    return [
        build_messages(
            INSTRUCTIONS, ONE_SHOT, task_prompt(task.description), [(ScriptedTeacher(task).act([]).text, EMPTY_OUTPUT)]
        )
        for task in random.Random(SEED).sample(tasks, count)
    ]


def ask(url: str, messages: list[dict[str, str]], max_tokens: int) -> dict:
    """One chat completion at temperature 0 with the fixed seed."""
    reply = httpx.post(
        f"{url}/chat/completions",
        timeout=600,
        json={"model": MODEL, "messages": messages, "max_tokens": max_tokens, "temperature": 0, "seed": SEED},
    )
    reply.raise_for_status()
    return reply.json()


def measure(dtype: str, prompts: list, in_flight: int, max_tokens: int) -> Run:
    """Start vLLM in `dtype`, send one untimed warm-up request, then time the prompts; stop it."""
    port = free_port()
    started = time.perf_counter()
    url = vllm_server.start(Settings(vllm_port=port, dtype=dtype, base_model_name=MODEL), port=port, timeout=900)
    start_s = time.perf_counter() - started
    try:
        ask(url, prompts[0], max_tokens)
        started = time.perf_counter()
        with ThreadPoolExecutor(in_flight) as pool:
            answers = list(pool.map(lambda messages: ask(url, messages, max_tokens), prompts))
        seconds = time.perf_counter() - started
    finally:
        vllm_server.stop(port)
    return Run(
        dtype,
        start_s,
        seconds,
        sum(a["usage"]["prompt_tokens"] for a in answers),
        sum(a["usage"]["completion_tokens"] for a in answers),
        [a["choices"][0]["message"]["content"] for a in answers],
    )


def cpu_name() -> str:
    """The CPU's model name from /proc/cpuinfo (platform's guess elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> int:
    """Measure both dtypes on the same requests, print the table and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=24)
    parser.add_argument("--in_flight", type=int, default=8)
    parser.add_argument("--max_tokens", type=int, default=64)
    add_out(parser, "vllm_dtype")
    args = parser.parse_args()
    os.chdir(ROOT)
    prompts = requests(args.requests)
    runs = [measure(dtype, prompts, args.in_flight, args.max_tokens) for dtype in ("bfloat16", "float32")]
    bf16, fp32 = runs
    native = cpu_has_bf16()
    flags = sorted(cpu_flags(Path("/proc/cpuinfo").read_text()) & {"avx2", "avx512f", "avx512_bf16", "amx_bf16"})
    same = sum(a == b for a, b in zip(bf16.outputs, fp32.outputs))
    lines = [
        f"{cpu_name()}, {os.cpu_count()} CPUs, flags {' '.join(flags) or 'none of avx2/avx512'}; "
        f"{len(prompts)} requests, {args.in_flight} in flight, max_tokens {args.max_tokens}, "
        f"{bf16.prompt_tokens} prompt tokens",
        "",
        "| dtype | vLLM start s | requests s | completion tokens | tokens/s |",
        "|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r.dtype} | {r.start_s:.0f} | {r.seconds:.1f} | {r.completion_tokens} | {r.tokens_per_s:.1f} |"
        for r in runs
    ]
    lines += [
        "",
        f"- bfloat16 seconds / float32 seconds: {bf16.seconds / fp32.seconds:.2f}",
        f"- identical outputs: {same}/{len(prompts)}",
        f"- native bfloat16 on this CPU: {'yes' if native else 'no'} (auto picks "
        f"{'bfloat16' if native else 'float32'})",
    ]
    report("\n".join(lines), args.out)
    return 1 if not native and fp32.seconds >= bf16.seconds else 0


if __name__ == "__main__":
    sys.exit(main())
