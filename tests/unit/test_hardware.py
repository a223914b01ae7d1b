"""The dtype vLLM and training load models in: chosen from real /proc/cpuinfo texts, LORALOOP_DTYPE overrides."""

import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from loraloop.hardware import choose_dtype, cpu_flags, cpu_has_bf16
from loraloop.settings import Settings

CPUINFO = Path("tests/fixtures/cpuinfo")
# Real /proc/cpuinfo texts: this CI machine (AVX2 only), an AMD EPYC Genoa (AVX512-BF16), an Intel
# Xeon with AMX (Emerald Rapids, model 207; AVX512-BF16 and AMX-BF16).
SAMPLES = {
    "amd-epyc-avx2.txt": "float32",
    "amd-epyc-genoa-avx512bf16.txt": "bfloat16",
    "intel-xeon-amx.txt": "bfloat16",
}


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
        "error: LORALOOP_DTYPE must be one of auto, float32, bfloat16, got 'fp16'"
    )
