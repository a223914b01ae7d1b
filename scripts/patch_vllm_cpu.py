"""Fix two defects of an installed vllm-cpu: its CPU LoRA ops (base-model tokens get no adapter's delta, and LoRA
costs a matmul per adapter in the batch instead of a copy of the adapter's weights per token), and its engine's
crash on a seeded, sampled request whose prompt is prefilled in chunks.

Why a patch (vllm-cpu 0.32.0, vllm/lora/ops/torch_ops/lora_ops.py, the ops the CPU build runs):
- Wrong outputs. vLLM marks a token that uses no adapter with the index -1. Its Triton kernels (GPU) skip such
  tokens; these ops gather `weights[-1]`, the last LoRA slot. Once any adapter has sat in the last slot
  (unloading does not clear it), a base-model request batched beside a LoRA request is served with that
  adapter: after the RL test's versions the base's first-token logprob read -0.0054 instead of -0.1846 and
  publish took a zero adapter for a trained one. Upstream: vllm-project/vllm#48421 (open).
- Time. They gather a copy of the adapter's matrices for every token (`weights[indices]`, then a batched
  einsum), so a prefill of T tokens copies T × rank × hidden weights per layer and projection: LoRA took 93 of
  the 108 CPU-seconds of model forward in the RL test (py-spy). Here tokens are grouped by slot, one matmul each.
The three bgmv ops are defined again at the end of the module (the sgmv ops and `torch_ops/__init__` pick
them up by name); the originals stay in the file, unused.

Why the second (vllm-cpu 0.32.0, vllm/v1/worker/gpu_model_runner.py, which the CPU model runner inherits): a
request still in prefill after a step (its prompt split over steps by the 2,048-token step budget, as when RL's
episodes send long prompts at once) gets a token sampled and thrown away, and vLLM rewinds that request's own
generator (a `seed`) with `gen.set_offset(gen.get_offset() - 4)`, an offset only CUDA's Philox generator has: on
the CPU it raises "CPU Generator does not use offset" and the engine dies (an RL run's rollouts then all fail:
2026-12-02, `loraloop miniwob` seed 2's RL). Here a CPU generator's state is kept before the step's sampling and
put back instead, so the thrown-away token leaves the seeded stream as it was (what the CUDA rewind does);
CUDA generators keep vLLM's own rewind.

Drop this script once a vllm-cpu release has these fixes; it fails, naming the file, when the code it overrides
has changed.

Usage: python scripts/patch_vllm_cpu.py [SITE_PACKAGES]   (default: the running interpreter's vllm)
Idempotent: a patched file is left as it is."""

import sys
from pathlib import Path

MARKER = "# loraloop: grouped LoRA ops that skip no-LoRA tokens (index -1)"
GATHER = "selected_loras = lora_b_weights[lora_indices_tensor].to(dtype=output_tensor.dtype)"
EXPECTED = 3  # the per-token gathers of bgmv_shrink, bgmv_expand and bgmv_expand_slice: the code overridden
OVERRIDES = f"""

{MARKER} (vllm-project/vllm#48421), written by loraloop's
# scripts/patch_vllm_cpu.py, which says why. They replace the three bgmv ops above; the sgmv ops call them.
def _lora_rows(inputs: torch.Tensor, weights: torch.Tensor, indices: torch.Tensor, dtype) -> torch.Tensor:
    if weights.dim() == 4:
        weights = weights.squeeze(dim=1)
    x = inputs.to(dtype=dtype)
    rows = max(x.shape[0], indices.numel())
    if x.shape[0] == 1 and rows > 1:  # the broadcasting the einsum allowed
        x = x.expand(rows, -1)
    if indices.numel() == 1 and rows > 1:
        indices = indices.expand(rows)
    slots = torch.unique(indices).tolist()
    if len(slots) == 1 and slots[0] >= 0:  # one adapter for every token: one matmul, no gather, no zeros
        return x @ weights[slots[0]].to(dtype=dtype).t()
    out = torch.zeros(rows, weights.shape[1], dtype=dtype, device=x.device)
    for slot in slots:
        if slot >= 0:
            picked = (indices == slot).nonzero(as_tuple=True)[0]
            out[picked] = x[picked] @ weights[slot].to(dtype=dtype).t()
    return out


def bgmv_expand(
    inputs: torch.Tensor,
    lora_b_weights: torch.Tensor,
    output_tensor: torch.Tensor,
    lora_indices_tensor: torch.Tensor,
    add_inputs: bool = True,
):
    outputs = _lora_rows(inputs, lora_b_weights, lora_indices_tensor, output_tensor.dtype)
    limit = output_tensor.shape[0]
    if outputs.shape[0] == 1 and output_tensor.shape[0] != 1:
        limit = 1
    common_len = min(outputs.shape[1], output_tensor.shape[1])
    if add_inputs:
        output_tensor[:, :common_len] += outputs[:limit, :common_len]
    else:
        output_tensor[:, :common_len] = outputs[:limit, :common_len]


def bgmv_shrink(
    inputs: torch.Tensor,
    lora_b_weights: torch.Tensor,
    output_tensor: torch.Tensor,
    lora_indices_tensor: torch.Tensor,
    scaling: float = 1.0,
):
    outputs = _lora_rows(inputs, lora_b_weights, lora_indices_tensor, output_tensor.dtype)
    output_tensor[:, : outputs.shape[1]] = scaling * outputs[:]


def bgmv_expand_slice(
    inputs: torch.Tensor,
    lora_b_weights: torch.Tensor,
    output_tensor: torch.Tensor,
    lora_indices_tensor: torch.Tensor,
    slice_offset: int,
    slice_size: int,
    add_inputs: bool = True,
):
    outputs = _lora_rows(inputs, lora_b_weights, lora_indices_tensor, output_tensor.dtype)
    if add_inputs:
        output_tensor[:, slice_offset : slice_offset + slice_size] += outputs[:]
    else:
        output_tensor[:, slice_offset : slice_offset + slice_size] = outputs[:]
"""


# The second patch: the rewind vLLM does, and where its sampling starts (a CPU generator's state is kept there)
REWIND = """            if gen is not None:
                gen.set_offset(gen.get_offset() - 4)
"""
REWOUND = """            if gen is not None:
                _loraloop_rewind(self, int(i), gen)
"""
SAMPLE = """        sampling_metadata = self.input_batch.sampling_metadata
"""
KEPT = """        sampling_metadata = self.input_batch.sampling_metadata
        _loraloop_keep_states(self)
"""
SAMPLER_MARKER = "# loraloop: a seeded request's CPU generator put back, not rewound by an offset"
SAMPLER_HELPERS = f"""

{SAMPLER_MARKER}, written by loraloop's
# scripts/patch_vllm_cpu.py, which says why.
def _loraloop_keep_states(runner) -> None:
    num_reqs = runner.input_batch.num_reqs
    runner._loraloop_states = {{
        int(i): gen.get_state()
        for i in np.nonzero(runner.discard_request_mask.np[:num_reqs])[0]
        if (gen := runner.input_batch.generators.get(int(i))) is not None and gen.device.type == "cpu"
    }}


def _loraloop_rewind(runner, i: int, gen) -> None:
    if gen.device.type != "cpu":
        gen.set_offset(gen.get_offset() - 4)  # vLLM's own rewind of CUDA's Philox offset
        return
    state = getattr(runner, "_loraloop_states", {{}}).get(i)
    if state is not None:
        gen.set_state(state)
"""


def vllm_file(site_packages: str | None, *parts: str) -> Path:
    """A file of the installed vllm: under SITE_PACKAGES, else where the running interpreter imports vllm from."""
    if site_packages:
        return Path(site_packages, "vllm", *parts)
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("patch_vllm_cpu: vllm is not installed in this interpreter")
    return Path(list(spec.submodule_search_locations)[0], *parts)


def patch(path: Path) -> str:
    """Patch `path` in place; 'patched' or 'already patched'. Exits naming the file when it is not as expected."""
    if not path.is_file():
        sys.exit(f"patch_vllm_cpu: {path} does not exist (is this a vLLM with the CPU LoRA ops?)")
    text = path.read_text()
    if MARKER in text:
        return "already patched"
    found = text.count(GATHER)
    if found != EXPECTED:
        sys.exit(
            f"patch_vllm_cpu: {path} has {found} of the {EXPECTED} gathers this patch replaces: this vLLM's "
            "CPU LoRA ops changed; check whether vllm-project/vllm#48421 is in it and drop or update the patch"
        )
    path.write_text(text.rstrip("\n") + "\n" + OVERRIDES)
    return "patched"


def patch_sampler(path: Path) -> str:
    """Patch the model runner at `path` in place (the CPU generator's rewind); 'patched' or 'already patched'.
    Exits naming the file when the rewind or the sampling's start is not there once, as in vllm-cpu 0.32.0."""
    if not path.is_file():
        sys.exit(f"patch_vllm_cpu: {path} does not exist (is this vLLM's v1 engine?)")
    text = path.read_text()
    if SAMPLER_MARKER in text:
        return "already patched"
    for code, what in ((REWIND, "the generator rewind"), (SAMPLE, "the sampling's start")):
        if text.count(code) != 1:
            sys.exit(
                f"patch_vllm_cpu: {path} has {text.count(code)} copies of {what} this patch changes (one expected): "
                "this vLLM's model runner changed; check whether it still rewinds a CPU generator by an offset "
                "and drop or update the patch"
            )
    text = text.replace(REWIND, REWOUND, 1).replace(SAMPLE, KEPT, 1)
    path.write_text(text.rstrip("\n") + "\n" + SAMPLER_HELPERS)
    return "patched"


if __name__ == "__main__":
    where = sys.argv[1] if len(sys.argv) > 1 else None
    for target, apply in (
        (vllm_file(where, "lora", "ops", "torch_ops", "lora_ops.py"), patch),
        (vllm_file(where, "v1", "worker", "gpu_model_runner.py"), patch_sampler),
    ):
        print(f"patch_vllm_cpu: {target}: {apply(target)}")
