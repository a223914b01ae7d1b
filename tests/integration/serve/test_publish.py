"""BC export → TRL training → publish into a real vLLM, including a publish that must fail."""
import json
from pathlib import Path

import pytest

from loraloop.datasets.export import export
from loraloop.errors import ConfigError, ServiceUnavailable
from loraloop.serve.publish import PublishVerificationError, publish
from loraloop.store import FileStore
from loraloop.store.records import EpisodeEnd, EpisodeStart, Step
from loraloop.store.trajectories import EpisodeRecorder
from loraloop.train.bc import train_bc
from loraloop.train.config import BCConfig

MODEL = Path("volumes/models/SmolLM2-135M-Instruct")


def make_episode(store, task, success, steps):
    rec = EpisodeRecorder(store, "m", "r", task, 0)
    rec.add(EpisodeStart(task_id=task, mode="m", run_id="r", category="files", system_prompt="sys", examples=[],
              first_observation="Task: count"))
    for i, (obs, out, err) in enumerate(steps):
        rec.add(Step(step_idx=i, observation=obs, raw_output=out, last_action_error=err, action_source="teacher"))
    rec.add(EpisodeEnd(success=success, total_steps=len(steps)))
    rec.flush()


def test_bc_export_keeps_error_free_steps_of_successful_episodes(tmp_path):
    store = FileStore(tmp_path / "store")
    make_episode(store, "a", True, [("Task: count", "bad", "format"), ("fmt err", "Act: bash\n```bash\nls\n```", None),
                                    ("The output of the OS:\n\n3", "Act: answer(3)", None)])
    make_episode(store, "b", False, [("Task: count", "Act: answer(9)", None)])
    manifest = export(store, "trajectories", tmp_path / "ds", ["bc"])
    rows = [json.loads(l) for l in (tmp_path / "ds" / "bc.jsonl").read_text().splitlines()]
    assert manifest["rows"] == {"bc": 2} and manifest["episodes"] == 2 and manifest["successful_episodes"] == 1
    assert [r["step_idx"] for r in rows] == [1, 2]
    last = rows[1]
    assert last["completion"] == [{"role": "assistant", "content": "Act: answer(3)"}]
    assert [m["content"] for m in last["prompt"]] == ["sys", "Task: count", "bad", "fmt err",
                                                      "Act: bash\n```bash\nls\n```", "The output of the OS:\n\n3"]
    assert json.loads((tmp_path / "ds" / "manifest.json").read_text())["files"]["bc.jsonl"]


def tiny_model(path: Path) -> Path:
    """A 2-layer random Llama with SmolLM2's tokenizer: training mechanics in seconds."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(MODEL)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048)
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def test_train_bc_writes_a_peft_adapter_and_curve(tmp_path):
    rows = [{"prompt": [{"role": "user", "content": f"Task: count files in /d{i}"}],
             "completion": [{"role": "assistant", "content": f"Act: answer({i})"}]} for i in range(8)]
    data = tmp_path / "bc.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = tiny_model(tmp_path / "tiny")
    metrics = train_bc(BCConfig(base_model=str(base), dataset_path=str(data), output_dir=str(tmp_path / "out"),
                                epochs=3, batch_size=4, lr=5e-3, lora_r=8))
    out = tmp_path / "out"
    assert (out / "adapter_model.safetensors").is_file() and (out / "loss.png").stat().st_size > 1000
    assert json.loads((out / "adapter_config.json").read_text())["r"] == 8
    assert metrics["steps"] == 6 and metrics["final_loss"] < metrics["first_loss"]
    assert metrics["dataset_digest"] and metrics["backend"] == "trl+peft"


def test_empty_or_wrong_dataset_fails_before_loading_a_model(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ConfigError, match="is empty"):
        train_bc(BCConfig(base_model="/nonexistent", dataset_path=str(empty), output_dir=str(tmp_path)))
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text('{"prompt": "x", "chosen": "y"}\n')
    with pytest.raises(ConfigError, match=r"wrong.jsonl:1: missing field\(s\) completion"):
        train_bc(BCConfig(base_model="/nonexistent", dataset_path=str(wrong), output_dir=str(tmp_path)))


def smollm_adapter(path: Path, random_b: bool, seed: int = 0) -> Path:
    """A real PEFT LoRA on SmolLM2: random B (changes outputs) or PEFT's default zero B (changes nothing)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32)
    peft = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"],
                                            init_lora_weights=not random_b, task_type="CAUSAL_LM"))
    if random_b:
        with torch.no_grad():
            for name, param in peft.named_parameters():
                if "lora_B" in name:
                    param.normal_(0, 0.05)
    peft.save_pretrained(path)
    return path


def test_publish_loads_into_vllm_and_verifies(vllm_url, settings_for, tmp_path):
    settings = settings_for(vllm_url=vllm_url)
    adapter = smollm_adapter(tmp_path / "good", random_b=True)
    meta = publish(settings, adapter, "good")
    assert meta["version"] == "v1" and meta["verification"]["differing"] >= 1
    assert meta["verification"]["parent"] == settings.base_model_name
    again = publish(settings, adapter, "good")  # same name: replaced in vLLM, next version in the store
    assert again["version"] == "v2"
    stored = sorted(p.name for p in (tmp_path / "store" / "adapters" / "good" / "v2").iterdir())
    assert stored == ["adapter_config.json", "adapter_model.safetensors", "metadata.json"]


def test_publish_fails_loudly_when_vllm_serves_base_outputs(vllm_url, settings_for, tmp_path):
    settings = settings_for(vllm_url=vllm_url)
    zero = smollm_adapter(tmp_path / "zero", random_b=False)
    with pytest.raises(PublishVerificationError, match="outputs equal the base model's"):
        publish(settings, zero, "zero")


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

    from loraloop.serve.publish import PublishVerificationError, load_adapter, serve_version, served_version
    from loraloop.serve.publish import verify_served

    settings = settings_for(vllm_url=vllm_url)
    first = publish(settings, smollm_adapter(tmp_path / "a", random_b=True, seed=1), "roll")
    second = publish(settings, smollm_adapter(tmp_path / "b", random_b=True, seed=2), "roll")
    assert (first["version"], second["version"]) == ("v1", "v2") and served_version(settings, "roll") == "v2"
    assert first["verification"]["outputs"] != second["verification"]["outputs"]
    env = {**os.environ, "LORALOOP_VLLM_URL": vllm_url, "LORALOOP_STORE_URL": settings.store_url,
           "LORALOOP_ADAPTERS_DIR": str(settings.adapters_dir)}
    cli = [sys.executable, "-m", "loraloop.cli", "adapters"]
    rolled = subprocess.run(cli + ["rollback", "roll"], env=env, capture_output=True, text=True, timeout=300)
    assert rolled.returncode == 0, rolled.stderr
    assert "now serves v1; its outputs equal the ones recorded at publish" in rolled.stderr.replace("\n", " ")
    listed = subprocess.run(cli + ["list"], env=env, capture_output=True, text=True, timeout=120).stdout
    assert "roll\tv1* v2\tserved: v1" in listed
    shown = json.loads(subprocess.run(cli + ["show", "roll", "--version", "v2"], env=env, capture_output=True,
                                      text=True, timeout=120).stdout)
    assert shown["version"] == "v2" and shown["weights_sha256"] == second["weights_sha256"]
    # vLLM serving v2 under the name while v1's record is expected: caught
    load_adapter(settings, "roll", str(settings.adapters_dir / "roll" / "v2"))
    recorded = first["verification"]
    with pytest.raises(PublishVerificationError, match="another version is in effect"):
        verify_served(settings, "roll", recorded["prompt_set"], recorded["outputs"])
    assert serve_version(settings, "roll", "v2")["verification"]["matches_recorded"]


@pytest.fixture(scope="module")
def second_vllm_url():
    """Another real vLLM CPU server: a replica that must serve a published adapter too."""
    from loraloop.serve import vllm_server
    from loraloop.settings import Settings
    from tests.conftest import free_port

    port = free_port()
    url = vllm_server.start(Settings(vllm_port=port), port=port)
    yield url
    vllm_server.stop(port)


def test_publish_makes_every_vllm_serve_the_adapter(vllm_url, second_vllm_url, settings_for, tmp_path):
    from loraloop.rollout.preflight import served_models

    settings = settings_for(vllm_url=vllm_url, publish_vllm_urls=f"{vllm_url},{second_vllm_url}")
    meta = publish(settings, smollm_adapter(tmp_path / "both", random_b=True, seed=3), "both")
    assert meta["verification"]["servers"] == [vllm_url, second_vllm_url]
    for url in (vllm_url, second_vllm_url):
        assert "both" in {m["id"] for m in served_models(url)}


def test_sync_gives_a_restarted_vllm_its_adapters_back(vllm_url, settings_for, tmp_path):
    """`loraloop adapters sync` (the stack's adapter-sync service) loads what the store wants served:
    a store-only publish, and after vLLM lost its runtime adapters (unloaded through vLLM's own API, as
    a restart loses them) the version last rolled back to, not the newest."""
    import os
    import subprocess
    import sys

    from loraloop.serve.publish import _post, serve_version, served_version
    from loraloop.serve.sync import sync

    settings = settings_for(vllm_url=vllm_url)
    publish(settings, smollm_adapter(tmp_path / "a", random_b=True, seed=3), "synced", load=False)
    assert served_version(settings, "synced") is None
    env = {**os.environ, "LORALOOP_VLLM_URL": vllm_url, "LORALOOP_STORE_URL": settings.store_url,
           "LORALOOP_ADAPTERS_DIR": str(settings.adapters_dir)}
    heartbeat = tmp_path / "beat"
    proc = subprocess.run([sys.executable, "-m", "loraloop.cli", "adapters", "sync", "--heartbeat", str(heartbeat)],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert f"loaded synced v1 -> {vllm_url}" in " ".join(proc.stderr.split()) and heartbeat.exists()
    assert served_version(settings, "synced") == "v1" and sync(settings) == []  # nothing to do twice
    publish(settings, smollm_adapter(tmp_path / "b", random_b=True, seed=4), "synced")
    serve_version(settings, "synced", "v1")  # a rollback: v1 is wanted though v2 is newer
    root = vllm_url.removesuffix("/v1")
    assert _post(root, "/v1/unload_lora_adapter", {"lora_name": "synced"}, settings).status_code == 200
    assert served_version(settings, "synced") is None
    assert sync(settings) == [f"synced v1 -> {vllm_url}"] and served_version(settings, "synced") == "v1"


def test_sync_rejects_a_pause_under_a_second():
    """`--every 0` would spin against vLLM and a negative pause would crash the service: named instead."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "loraloop.cli", "adapters", "sync", "--every", "0"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--every" in proc.stderr and "greater than or equal to 1" in proc.stderr, proc.stderr
