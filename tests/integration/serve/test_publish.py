"""Publishing real SmolLM2 LoRAs into a real vLLM: verified loads, a publish that must fail, rollback, every
server of a set, and `adapters sync` after vLLM lost its adapters."""

import json
import shutil

import pytest

from loraloop.errors import ConfigError, ServiceUnavailable
from loraloop.serve.publish import IN_EFFECT_GAP, PublishVerificationError, listed, publish
from loraloop.train.verify_logprobs import FILE
from tests.helpers import free_port, smollm_adapter


def test_publish_loads_into_vllm_and_verifies(vllm_url, settings_for, tmp_path):
    settings = settings_for(vllm_url=vllm_url)
    adapter = smollm_adapter(tmp_path / "good", random_b=True)
    meta = publish(settings, adapter, "good")
    assert meta["version"] == "v1" and meta["served_name"] == "good-v1"
    # in effect: the logprobs of the first reply token's likeliest alternatives moved, on every prompt it was given
    check = meta["verification"]
    assert check["logprob_gap"] > IN_EFFECT_GAP and check["base_distance"] > 0, check
    assert check["parent"] == settings.base_model_name and check["prompts"] == len(check["fingerprint"]) == 2
    assert set(meta["publish_s"]) == {"upload", "download", "load", "verify"}  # where its time went
    again = publish(settings, adapter, "good")  # same name: the next version, served under its own name
    assert again["version"] == "v2" and again["served_name"] == "good-v2"
    stored = sorted(p.name for p in (tmp_path / "store" / "adapters" / "good" / "v2").iterdir())
    assert stored == ["adapter_config.json", "adapter_model.safetensors", "metadata.json"]


def test_publish_fails_loudly_when_vllm_serves_base_outputs(vllm_url, settings_for, tmp_path):
    settings = settings_for(vllm_url=vllm_url)
    zero = smollm_adapter(tmp_path / "zero", random_b=False)
    with pytest.raises(PublishVerificationError, match="logprobs equal the base model's"):
        publish(settings, zero, "zero")


def test_publish_checks_the_served_logprobs_against_the_trainers_own(vllm_url, settings_for, tmp_path):
    """The version goes live only if vLLM's logprobs on the verification prompts are the trainer's own (within the
    threshold, recorded with the version); a wrong adapter, a zero one and a stale copy vLLM reads in place of the
    new one all differ from the base, or not, but never match the trainer: each is refused and unloaded."""
    settings = settings_for(vllm_url=vllm_url)
    good = smollm_adapter(tmp_path / "good", random_b=True, seed=1, trainer_logprobs=True)
    meta = publish(settings, good, "checked")
    trainer = meta["verification"]["trainer"]
    assert trainer["max_diff"] <= trainer["threshold"] == settings.publish_max_logprob_diff, trainer
    assert trainer["tokens"] >= len(meta["verification"]["prompt_set"]) == 2 and trainer["dtype"] == "float32"

    def refused(adapter, name, problem, served):
        with pytest.raises(PublishVerificationError, match=problem):
            publish(settings, adapter, name)
        assert served not in listed(settings)  # refused: unloaded, so no request meets it

    # another adapter in the trainer's folder, further from the good one than the threshold: two small random adapters
    # (B's std 0.05) served in float32 (a CPU without AVX-512) stayed within 0.5 of each other, so the check could not
    # tell them apart
    wrong = smollm_adapter(tmp_path / "wrong", random_b=True, seed=2, b_std=0.3)
    shutil.copy(good / FILE, wrong / FILE)
    refused(wrong, "checked", "differ from the trainer's own", "checked-v2")
    zero = smollm_adapter(tmp_path / "zero", random_b=False)
    shutil.copy(good / FILE, zero / FILE)
    refused(zero, "checked", "equal the base model's", "checked-v3")
    # a stale copy: vLLM reads adapters from its own folder, where this version's path holds another adapter's files
    stale = tmp_path / "vllm-view"
    shutil.copytree(tmp_path / "wrong", stale / "fresh" / "v1")
    behind = settings_for(vllm_url=vllm_url, vllm_adapters_dir=str(stale))
    with pytest.raises(PublishVerificationError, match="differ from the trainer's own"):
        publish(behind, good, "fresh")
    assert "fresh-v1" not in listed(settings)


def test_publish_refuses_a_malformed_trainer_logprobs_file_before_storing(settings_for, tmp_path):
    adapter = smollm_adapter(tmp_path / "a", random_b=True)
    (adapter / FILE).write_text('{"prompts": [], "logprobs": []}')
    settings = settings_for(vllm_url="http://127.0.0.1:9/v1")
    with pytest.raises(ConfigError, match=f"{FILE}: needs `prompts` and `logprobs`"):
        publish(settings, adapter, "x")
    (adapter / FILE).write_text('{"prompts": [[]], "logprobs": [[-0.1]]}')
    with pytest.raises(ConfigError, match=rf"{FILE}: logprobs\[0\] must be a non-empty object"):
        publish(settings, adapter, "x")
    (adapter / FILE).write_text("{not json")
    with pytest.raises(ConfigError, match=f"{FILE}: not JSON"):
        publish(settings, adapter, "x")
    assert not (tmp_path / "store").exists()  # nothing stored


def test_publish_rejects_bad_adapters_before_any_load(settings_for, tmp_path):
    settings = settings_for(vllm_url="http://127.0.0.1:9/v1", max_lora_rank=4)
    with pytest.raises(ConfigError, match="missing adapter_config.json"):
        publish(settings, tmp_path, "x")
    adapter = smollm_adapter(tmp_path / "r8", random_b=True)
    with pytest.raises(ConfigError, match="rank 8 exceeds vLLM's --max-lora-rank 4"):
        publish(settings, adapter, "x")
    with pytest.raises(ServiceUnavailable, match="127.0.0.1:9"):
        publish(settings_for(vllm_url="http://127.0.0.1:9/v1"), adapter, "x")


def test_rollback_serves_the_earlier_version_and_proves_it(vllm_url, settings_for, tmp_path):
    import os
    import subprocess
    import sys

    from loraloop.serve.publish import (
        PublishVerificationError,
        load_adapter,
        serve_version,
        served_version,
        verify_served,
    )

    settings = settings_for(vllm_url=vllm_url)
    first = publish(settings, smollm_adapter(tmp_path / "a", random_b=True, seed=1), "roll")
    second = publish(settings, smollm_adapter(tmp_path / "b", random_b=True, seed=2), "roll")
    assert (first["version"], second["version"]) == ("v1", "v2") and served_version(settings, "roll") == "v2"
    assert first["verification"]["fingerprint"] != second["verification"]["fingerprint"]
    env = {
        **os.environ,
        "LORALOOP_VLLM_URL": vllm_url,
        "LORALOOP_STORE_URL": settings.store_url,
        "LORALOOP_ADAPTERS_DIR": str(settings.adapters_dir),
    }
    cli = [sys.executable, "-m", "loraloop.cli", "adapters"]
    rolled = subprocess.run(cli + ["rollback", "roll"], env=env, capture_output=True, text=True, timeout=300)
    assert rolled.returncode == 0, rolled.stderr
    assert "now serves v1; its logprobs match the ones recorded at publish" in " ".join(rolled.stderr.split())
    listed = subprocess.run(cli + ["list"], env=env, capture_output=True, text=True, timeout=120).stdout
    assert "roll\tv1* v2\tserved: v1" in listed
    shown = json.loads(
        subprocess.run(
            cli + ["show", "roll", "--version", "v2"], env=env, capture_output=True, text=True, timeout=120
        ).stdout
    )
    assert shown["version"] == "v2" and shown["weights_sha256"] == second["weights_sha256"]
    # vLLM serving v2's weights under v1's name while v1's record is expected: caught
    load_adapter(settings, "roll-v1", str(settings.adapters_dir / "roll" / "v2"))
    recorded = first["verification"]
    with pytest.raises(PublishVerificationError, match="another version is in effect"):
        verify_served(settings, "roll-v1", recorded["prompt_set"], recorded)
    assert serve_version(settings, "roll", "v2")["verification"]["matches_recorded"]


@pytest.fixture(scope="module")
def second_vllm_url():
    """Another real vLLM CPU server: a replica that must serve a published adapter too."""
    import os
    from unittest import mock

    from loraloop.serve import vllm_server
    from loraloop.settings import Settings

    port = free_port()
    # 1 GiB of KV cache (whole GiB only): it answers a few short verification requests, and the suite's other servers
    # and trainers once left 1.78 GiB free, below the default 2 GiB ("Available memory on node 0 ... less than")
    with mock.patch.dict(os.environ, {"VLLM_CPU_KVCACHE_SPACE": "1"}):
        url = vllm_server.start(Settings(vllm_port=port), port=port)
    yield url
    vllm_server.stop(port)


def test_publish_makes_every_vllm_serve_the_adapter(vllm_url, second_vllm_url, settings_for, tmp_path):
    from loraloop.rollout.preflight import served_models

    settings = settings_for(vllm_url=vllm_url, publish_vllm_urls=f"{vllm_url},{second_vllm_url}")
    meta = publish(settings, smollm_adapter(tmp_path / "both", random_b=True, seed=3), "both")
    assert meta["verification"]["servers"] == [vllm_url, second_vllm_url]
    for url in (vllm_url, second_vllm_url):
        assert "both-v1" in {m["id"] for m in served_models(url)}


def test_sync_gives_a_restarted_vllm_its_adapters_back(vllm_url, settings_for, tmp_path):
    """`loraloop adapters sync` (the stack's adapter-sync service) loads what the store wants served:
    a store-only publish, and after vLLM lost its runtime adapters (unloaded through vLLM's own API, as
    a restart loses them) the version last rolled back to, not the newest."""
    import os
    import subprocess
    import sys

    from loraloop.serve.publish import _post, serve_version, served_version
    from loraloop.serve.sync import sync

    # What sync loads is the subject here, not how fast: on a thrashing CI runner (loading SmolLM2's weights took
    # 2 minutes) one of its requests to vLLM got no reply within the default 120 s (stop 38), so 10 minutes here.
    settings = settings_for(vllm_url=vllm_url, request_timeout_s=600.0)
    publish(settings, smollm_adapter(tmp_path / "a", random_b=True, seed=3), "synced", load=False)
    assert served_version(settings, "synced") is None
    env = {
        **os.environ,
        "LORALOOP_REQUEST_TIMEOUT_S": "600",
        "LORALOOP_VLLM_URL": vllm_url,
        "LORALOOP_STORE_URL": settings.store_url,
        "LORALOOP_ADAPTERS_DIR": str(settings.adapters_dir),
    }
    heartbeat = tmp_path / "beat"
    proc = subprocess.run(
        [sys.executable, "-m", "loraloop.cli", "adapters", "sync", "--heartbeat", str(heartbeat)],
        env=env,
        capture_output=True,
        text=True,
        timeout=800,  # under pytest-timeout's 900 s
    )
    assert proc.returncode == 0, proc.stderr
    assert f"loaded synced v1 -> {vllm_url}" in " ".join(proc.stderr.split()) and heartbeat.exists()
    assert served_version(settings, "synced") == "v1" and sync(settings) == []  # nothing to do twice
    publish(settings, smollm_adapter(tmp_path / "b", random_b=True, seed=4), "synced")
    serve_version(settings, "synced", "v1")  # a rollback: v1 is wanted though v2 is newer
    root = vllm_url.removesuffix("/v1")
    assert _post(root, "/v1/unload_lora_adapter", {"lora_name": "synced-v1"}, settings).status_code == 200
    assert served_version(settings, "synced") is None
    assert sync(settings) == [f"synced v1 -> {vllm_url}"] and served_version(settings, "synced") == "v1"
