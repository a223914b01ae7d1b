"""The model client: retries with backoff on 5xx, one clear error when the server keeps failing.

A vLLM that answers 503 on demand cannot be had for real, so a FAKE server (stdlib http.server on
loopback) stands in for those failures; every other test talks to the real vLLM CPU server.
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from loraloop.agents.policy import OpenAIPolicy
from loraloop.errors import ServiceUnavailable

COMPLETION = {
    "id": "x",
    "object": "chat.completion",
    "created": 0,
    "model": "served-name",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "Act: finish"}}],
    "usage": {"prompt_tokens": 1, "completion_tokens": 3, "total_tokens": 4},
}


def flaky_server(failures: int):
    """A FAKE OpenAI endpoint that answers 503 `failures` times, then a completion."""
    calls = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            calls.append(self.path)
            failing = len(calls) <= failures
            body = json.dumps({"error": {"message": "overloaded"}} if failing else COMPLETION).encode()
            self.send_response(503 if failing else 200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, calls


@pytest.mark.parametrize("failures, retries, ok", [(2, 3, True), (5, 2, False)])
def test_5xx_is_retried_then_reported(failures, retries, ok):
    server, calls = flaky_server(failures)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    policy = OpenAIPolicy(model="m", base_url=url, retries=retries, max_in_flight=2)
    try:
        if ok:
            reply = policy.act([{"role": "user", "content": "hi"}])
            assert reply.text == "Act: finish" and reply.model == "served-name" and len(calls) == failures + 1
            # a server that returns no token ids or logprobs (not vLLM): those stay empty
            assert reply.prompt_token_ids is reply.completion_token_ids is reply.logprobs is None
        else:
            with pytest.raises(ServiceUnavailable, match=rf"{url} kept failing: HTTP 503"):
                policy.act([{"role": "user", "content": "hi"}])
            assert len(calls) == retries + 1
    finally:
        server.shutdown()
