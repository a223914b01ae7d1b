"""What the recording gateway adds to a call: latency per chat completion through it against vLLM directly, one run.

    .venv/bin/python bench/gateway.py [--url http://127.0.0.1:8000/v1] [--calls 60] [--max_tokens 8]
                                      [--broker redis://...] [--out]

Starts `loraloop serve gateway` (sessions in memory, or in Redis with --broker; episodes in a temporary file
store) in front of the vLLM at --url, or of one it starts (CPU, SmolLM2-135M-Instruct, free port). Then, one
call at a time so that nothing queues, it alternates the same request (temperature 0, fixed seed) sent to vLLM
directly and through the gateway, whole and streamed (time to the last byte), `--calls` pairs each after an
untimed warm-up. An agent's session is 10 calls here: a new one starts every 10 (outside the timing), so each
recorded call pays what a session of its length costs. The direct call is the client's own request; the gateway
also asks vLLM for logprobs and token ids, so "direct+trace" (the same request with those fields, straight to
vLLM) is timed too: gateway − direct is what a user sees, gateway − direct+trace what the proxy itself costs.
"direct+logprobs" and "direct+token ids" ask for one of the two each: where vLLM's part of the trace goes.

Then the same again against a stand-in for vLLM that answers at once with a reply the real one gave in this run
(`canned`): what the proxy itself costs, apart from the model's time and from vLLM's threads sharing the CPUs.

Target: at most 5 ms added at p50 (whole calls, against the real vLLM directly) on the CPU stack. Prints p50 and
p95 of each and PASS or MISSED.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

from loraloop.serve import vllm_server
from loraloop.settings import Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from results import ROOT, add_out, free_port, machine, percentile, report  # noqa: E402

MODEL, SEED, ADMIN, SESSION_CALLS, TARGET_MS = "SmolLM2-135M-Instruct", 1234, "bench-admin-key-0123456789", 10, 5.0
MESSAGES = [{"role": "system", "content": "You answer in one word."}, {"role": "user", "content": "Name a colour."}]
TRACE = {"logprobs": True, "return_token_ids": True}
# The direct requests timed against vLLM: the client's own, then with each field the gateway adds, then both
DIRECT = {
    "direct": {},
    "direct+logprobs": {"logprobs": True},
    "direct+token ids": {"return_token_ids": True},
    "direct+trace": TRACE,
}


def call(client: httpx.Client, url: str, key: str, max_tokens: int, stream: bool, extra: dict | None = None) -> float:
    """Seconds for one chat completion, whole or streamed to its last byte."""
    body = {
        "model": MODEL,
        "messages": MESSAGES,
        "max_tokens": max_tokens,
        "temperature": 0,
        "seed": SEED,
        "stream": stream,
        **(extra or {}),
    }
    started = time.perf_counter()
    with client.stream(
        "POST", f"{url}/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}
    ) as reply:
        reply.read()
    seconds = time.perf_counter() - started
    if reply.status_code != 200:
        raise SystemExit(f"{url}: HTTP {reply.status_code}: {reply.text[:300]}")
    return seconds


class Sessions:
    """The bench's agent sessions on the gateway: a new one every SESSION_CALLS calls, ended outside the timing."""

    def __init__(self, client: httpx.Client, gateway: str) -> None:
        self.client, self.gateway = client, gateway
        self.key, self.calls = None, 0

    def key_for_next(self) -> str:
        if self.key is None or self.calls == SESSION_CALLS:
            self.end()
            started = self.client.post(
                f"{self.gateway}/rl/start_session",
                json={"task_id": "bench"},
                headers={"Authorization": f"Bearer {ADMIN}"},
            )
            self.key, self.calls = started.raise_for_status().json()["api_key"], 0
        self.calls += 1
        return self.key

    def end(self) -> None:
        if self.key is not None:
            self.client.post(
                f"{self.gateway}/rl/end_session", json={}, headers={"Authorization": f"Bearer {self.key}"}
            ).raise_for_status()
            self.key = None


def measure(
    vllm: str, gateway: str, calls: int, max_tokens: int, stream: bool, parts: bool = True
) -> dict[str, list[float]]:
    """`calls` rounds of the direct requests (DIRECT; only direct and direct+trace without `parts`) and the
    gateway's, the order rotated each round, after one untimed round."""
    direct = {name: extra for name, extra in DIRECT.items() if parts or name in ("direct", "direct+trace")}
    with httpx.Client(timeout=600) as client:
        sessions = Sessions(client, gateway)
        runs = {
            **{
                name: (lambda extra=extra: call(client, vllm, "EMPTY", max_tokens, stream, extra))
                for name, extra in direct.items()
            },
            "gateway": lambda: call(client, f"{gateway}/v1", sessions.key_for_next(), max_tokens, stream),
        }
        names = list(runs)
        times: dict[str, list[float]] = {name: [] for name in names}
        for name in names:
            runs[name]()  # warm-up
        for round_ in range(calls):
            turn = round_ % len(names)
            for name in names[turn:] + names[:turn]:
                times[name].append(runs[name]())
        sessions.end()
    return times


@contextmanager
def canned(vllm: str, max_tokens: int) -> Iterator[str]:
    """A stand-in for vLLM on loopback that answers every chat completion at once with one reply the real vLLM gave
    now (whole, or its stream's events): gateway − direct against it is the proxy's own cost, without the model's
    time or its threads competing for the CPU."""
    body = {"model": MODEL, "messages": MESSAGES, "max_tokens": max_tokens, "temperature": 0, "seed": SEED, **TRACE}
    whole = httpx.post(f"{vllm}/chat/completions", json=body, timeout=600).content
    streamed = httpx.post(f"{vllm}/chat/completions", json={**body, "stream": True}, timeout=600).content
    models = httpx.get(f"{vllm}/models", timeout=60).content

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._send(models, "application/json")

        def do_POST(self) -> None:
            asked = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self._send(streamed, "text/event-stream") if asked.get("stream") else self._send(whole, "application/json")

        def _send(self, content: bytes, kind: str) -> None:  # one write: headers apart would wait on delayed ACKs
            self.wfile.write(
                f"HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {len(content)}\r\n\r\n".encode() + content
            )

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1"
    finally:
        server.shutdown()
        server.server_close()


def start_gateway(vllm: str, broker: str, store: str) -> tuple[subprocess.Popen, str]:
    """`loraloop serve gateway` on a free port over the vLLM, the broker (or memory) and the store."""
    port = free_port()
    env = {
        **os.environ,
        "LORALOOP_VLLM_URL": vllm,
        "LORALOOP_BROKER_URL": broker,
        "LORALOOP_STORE_URL": store,
        "LORALOOP_GATEWAY_ADMIN_KEY": ADMIN,
        "LORALOOP_BASE_MODEL_NAME": MODEL,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "services"), os.environ.get("PYTHONPATH", "")]),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "loraloop.cli", "serve", "gateway", "--port", str(port)],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("the gateway did not answer /health within 120 s")


def table(results: dict[str, dict[str, list[float]]]) -> tuple[list[str], float]:
    """Markdown rows (p50, p95 of each, and the added ms) and the p50 added to whole calls against direct."""
    lines = [
        "| calls | direct p50 | direct p95 | direct+trace p50 | gateway p50 | gateway p95 | added p50 (vs direct) "
        "| added p95 (vs direct) | added p50 (vs direct+trace) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    added_whole = 0.0
    for mode, times in results.items():
        d50, d95 = percentile(times["direct"], 50), percentile(times["direct"], 95)
        t50 = percentile(times["direct+trace"], 50)
        g50, g95 = percentile(times["gateway"], 50), percentile(times["gateway"], 95)
        if mode == "whole":
            added_whole = g50 - d50
        lines.append(
            f"| {mode} | {d50:.1f} ms | {d95:.1f} ms | {t50:.1f} ms | {g50:.1f} ms | {g95:.1f} ms | "
            f"{g50 - d50:+.1f} ms | {g95 - d95:+.1f} ms | {g50 - t50:+.1f} ms |"
        )
    return lines, added_whole


def parts_table(results: dict[str, dict[str, list[float]]]) -> list[str]:
    """Markdown rows: what each field the gateway adds to a request costs vLLM (p50 against the client's own request)
    beside the proxy's share (gateway − direct+trace)."""
    lines = [
        "| calls | direct p50 | +logprobs | +token ids | +both (direct+trace) | proxy (gateway − direct+trace) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for mode, times in results.items():
        p50 = {name: percentile(values, 50) for name, values in times.items()}
        lines.append(
            f"| {mode} | {p50['direct']:.1f} ms | {p50['direct+logprobs'] - p50['direct']:+.1f} ms | "
            f"{p50['direct+token ids'] - p50['direct']:+.1f} ms | {p50['direct+trace'] - p50['direct']:+.1f} ms | "
            f"{p50['gateway'] - p50['direct+trace']:+.1f} ms |"
        )
    return lines


def main() -> int:
    """Run the bench, print (and with --out write) the table, PASS or MISSED."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default=None, help="a running vLLM's /v1 URL (default: start one)")
    parser.add_argument("--calls", type=int, default=60, help="timed calls of each kind, whole and streamed")
    parser.add_argument("--max_tokens", type=int, default=8)
    parser.add_argument("--broker", default="", help="redis://… : sessions in Redis (default: in memory)")
    add_out(parser, "gateway")
    args = parser.parse_args()
    port = None
    if args.url is None:
        port = free_port()
        args.url = vllm_server.start(Settings(vllm_port=port), port=port, timeout=900)
    try:
        with tempfile.TemporaryDirectory() as store:
            proc, gateway = start_gateway(args.url, args.broker, f"file://{store}")
            try:
                results = {
                    "whole": measure(args.url, gateway, args.calls, args.max_tokens, stream=False),
                    "streamed": measure(args.url, gateway, args.calls, args.max_tokens, stream=True),
                }
            finally:
                proc.terminate()
                proc.wait(timeout=30)
            with canned(args.url, args.max_tokens) as stand_in:
                proc, gateway = start_gateway(stand_in, args.broker, f"file://{store}")
                try:
                    alone = {
                        "whole": measure(stand_in, gateway, args.calls * 3, args.max_tokens, False, parts=False),
                        "streamed": measure(stand_in, gateway, args.calls * 3, args.max_tokens, True, parts=False),
                    }
                finally:
                    proc.terminate()
                    proc.wait(timeout=30)
    finally:
        if port is not None:
            vllm_server.stop(port)
    lines, added = table(results)
    alone_lines, alone_added = table(alone)
    ratio = added / TARGET_MS
    verdict = "PASS" if added <= TARGET_MS else "MISSED"
    markdown = "\n".join(
        [
            "# Gateway: latency added per call",
            "",
            machine(),
            "",
            f"vLLM CPU serving {MODEL}; {args.calls} calls of each kind, one at a time, interleaved; max_tokens "
            f"{args.max_tokens}, temperature 0; sessions {'in Redis' if args.broker else 'in memory'}, "
            f"{SESSION_CALLS} calls each. Added = gateway − direct at the same percentile.",
            "",
            *lines,
            "",
            "Where the added time goes (p50, against the client's own request straight to vLLM):",
            "",
            *parts_table(results),
            "",
            f"The proxy alone: the same, {args.calls * 3} calls of each kind, against a stand-in for vLLM on loopback "
            "that answers at once with a reply the real one gave in this run (no model time, no model threads on the "
            f"CPUs): added at p50 (whole calls) {alone_added:.2f} ms.",
            "",
            *alone_lines,
            "",
            f"Added at p50 (whole calls): {added:.2f} ms against a target of {TARGET_MS:g} ms: ratio {ratio:.2f} "
            f"-> **{verdict}**",
            "",
        ]
    )
    report(markdown, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
