"""The dtype vLLM and training load models in: chosen from real /proc/cpuinfo texts, LORALOOP_DTYPE overrides."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from loraloop.hardware import choose_dtype, cpu_flags, cpu_has_bf16
from loraloop.serve import vllm_server
from loraloop.settings import Settings, get_settings

CPUINFO = Path("tests/fixtures/cpuinfo")
# Real /proc/cpuinfo texts: this CI machine (AVX2 only), an AMD EPYC Genoa (AVX512-BF16), an Intel
# Xeon with AMX (Emerald Rapids, model 207; AVX512-BF16 and AMX-BF16).
SAMPLES = {"amd-epyc-avx2.txt": "float32", "amd-epyc-genoa-avx512bf16.txt": "bfloat16",
           "intel-xeon-amx.txt": "bfloat16"}


@pytest.mark.parametrize("sample,dtype", SAMPLES.items())
def test_auto_is_bfloat16_only_where_the_cpu_computes_it(sample, dtype):
    text = (CPUINFO / sample).read_text()
    flags = cpu_flags(text)
    assert "avx2" in flags and "sse2" in flags and "ept_x_only" not in flags  # that is in `vmx flags`
    assert cpu_has_bf16(text) is (dtype == "bfloat16")
    assert choose_dtype("auto", bf16=cpu_has_bf16(text)) == dtype


def test_the_amx_sample_has_both_bf16_flags_and_genoa_only_avx512s():
    assert {"avx512_bf16", "amx_bf16"} <= cpu_flags((CPUINFO / "intel-xeon-amx.txt").read_text())
    genoa = cpu_flags((CPUINFO / "amd-epyc-genoa-avx512bf16.txt").read_text())
    assert "avx512_bf16" in genoa and "amx_bf16" not in genoa


def test_text_without_flags_is_no_bf16():
    assert cpu_flags("processor\t: 0\nFeatures\t: fp asimd bf16\n") == frozenset()
    assert choose_dtype("auto", bf16=cpu_has_bf16("")) == "float32"


@pytest.mark.parametrize("setting", ["float32", "bfloat16"])
def test_the_setting_overrides_what_the_hardware_says(setting):
    assert choose_dtype(setting, bf16=True) == choose_dtype(setting, bf16=False) == setting


def test_a_bad_dtype_is_named():
    with pytest.raises(ValueError, match="LORALOOP_DTYPE must be one of auto, float32, bfloat16, got 'fp16'"):
        choose_dtype("fp16")
    with pytest.raises(ValidationError, match="dtype"):
        Settings(dtype="fp16")


def test_loraloop_dtype_is_read_from_the_environment(monkeypatch):
    monkeypatch.setenv("LORALOOP_DTYPE", "bfloat16")
    assert Settings().dtype == "bfloat16"
    monkeypatch.delenv("LORALOOP_DTYPE")
    assert Settings(_env_file=None).dtype == "auto"


def test_the_file_runs_alone_as_the_vllm_cpu_image_runs_it():
    """images/vllm-cpu copies hardware.py without loraloop: `python -I` (no loraloop on the path)."""
    path = "services/loraloop/hardware.py"
    auto = subprocess.run([sys.executable, "-I", path], capture_output=True, text=True)
    assert auto.returncode == 0 and auto.stdout.strip() == choose_dtype("auto"), auto.stderr
    forced = subprocess.run([sys.executable, "-I", path, "bfloat16"], capture_output=True, text=True)
    assert forced.stdout.strip() == "bfloat16"
    bad = subprocess.run([sys.executable, "-I", path, "fp16"], capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stderr.strip() == (
        "error: LORALOOP_DTYPE must be one of auto, float32, bfloat16, got 'fp16'")


@pytest.mark.vllm
def test_the_local_vllm_runs_in_the_chosen_dtype(vllm_url):
    """The tests' vLLM (conftest) was started by serve/vllm_server with the auto choice: its log
    names it in loraloop's line, and vLLM's own engine config says the same."""
    chosen = choose_dtype(Settings().dtype)
    port = int(vllm_url.rsplit(":", 1)[1].split("/")[0])
    log = vllm_server.log_path(port).read_text(errors="replace")
    ours = log.rsplit(f"loraloop: starting vLLM on port {port} with --dtype ", 1)
    assert len(ours) == 2 and ours[1].startswith(f"{chosen} "), log[-2000:]
    engine = re.findall(r"(?<!\w)dtype=torch\.(\w+)", ours[1])  # not kv_cache_dtype
    assert engine and set(engine) == {chosen}, ours[1][:3000]


@pytest.mark.parametrize("setting", ["auto", "bfloat16"])
def test_training_runs_in_the_chosen_dtype_and_records_it(setting, monkeypatch, tmp_path):
    """BC on a tiny random Llama: LORALOOP_DTYPE reaches training, and training_metrics.json says
    which dtype the model was trained in (auto: this CPU's choice)."""
    from loraloop.train.bc import train_bc
    from loraloop.train.config import BCConfig
    from tests.test_train_publish import tiny_model

    monkeypatch.setenv("LORALOOP_DTYPE", setting)
    get_settings.cache_clear()
    try:
        rows = [{"prompt": [{"role": "user", "content": f"Task: count files in /d{i}"}],
                 "completion": [{"role": "assistant", "content": f"Act: answer({i})"}]} for i in range(4)]
        data = tmp_path / "bc.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
        metrics = train_bc(BCConfig(base_model=str(tiny_model(tmp_path / "tiny")), dataset_path=str(data),
                                    output_dir=str(tmp_path / "out"), epochs=1, batch_size=4, lora_r=4))
    finally:
        get_settings.cache_clear()
    expected = choose_dtype(setting)
    assert metrics["dtype"] == expected and metrics["backend"] == "trl+peft"
    saved = json.loads((tmp_path / "out" / "training_metrics.json").read_text())
    assert saved["dtype"] == expected
