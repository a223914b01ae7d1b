"""Decoupled mode's proximal logprobs from the first optimiser step's own forward pass (`first_step_rows`): before
any parameter moves, the detached logprobs of the step's forward pass are the proximal policy's, so the pass before
the update can leave those rows out. These tests show that the step moves the LoRA weights exactly as it does with
the pass, that a row without them after an update is refused, and, with accelerate's own batch sharding, that the
rows `first_step_rows` names are trained on in the first step only, on every process."""

import pytest
import torch
from accelerate.data_loader import BatchSamplerShard
from hypothesis import given
from hypothesis import strategies as st
from torch.utils.data import BatchSampler, SequentialSampler

from loraloop.train.rl_trainer import Correction, first_step_rows
from tests.rl_tiny import tiny_policy, trained_lora

DECOUPLED = [Correction("token", 2.0), Correction("sequence", 2.0)]


@pytest.mark.parametrize("correction", DECOUPLED, ids=["token-is", "sequence-is"])
@pytest.mark.parametrize("micro", [1, 2, 4])
def test_a_step_with_its_rows_proximal_logprobs_from_its_forward_moves_the_weights_as_with_the_pass(
    tmp_path, correction, micro
):
    with_pass = trained_lora(tmp_path, micro=micro, fused=False, correction=correction)
    without = trained_lora(tmp_path, micro=micro, fused=False, correction=correction, from_forward=4)
    start = {n: p.detach() for n, p in tiny_policy(False).named_parameters() if "lora_" in n}
    assert any(not torch.allclose(without[n], start[n]) for n in start), "the step moved nothing"
    for name in with_pass:
        torch.testing.assert_close(without[name], with_pass[name], rtol=1e-5, atol=1e-7, msg=name)


def test_two_steps_take_the_first_ones_rows_from_its_forward_and_the_second_ones_from_the_pass(tmp_path):
    first = first_step_rows(4, batch_size=2, epochs=1.0, processes=1, masked_is=False)
    assert first == 2
    correction = DECOUPLED[0]
    with_pass = trained_lora(tmp_path, micro=1, fused=False, correction=correction, steps=2)
    without = trained_lora(tmp_path, micro=1, fused=False, correction=correction, steps=2, from_forward=first)
    for name in with_pass:
        torch.testing.assert_close(without[name], with_pass[name], rtol=1e-5, atol=1e-7, msg=name)


def test_a_row_without_proximal_logprobs_after_an_update_is_refused(tmp_path):
    with pytest.raises(RuntimeError, match="reached optimiser step 2, after an update"):
        trained_lora(tmp_path, micro=1, fused=False, correction=DECOUPLED[0], steps=2, from_forward=3)


def steps_of(rows: int, micro: int, passes: int, processes: int) -> list[list[set[int]]]:
    """For each process, the rows each of its optimiser steps trains on: the rows in order (the sequential sampler),
    batched `micro` a pass and sharded among the processes by accelerate as the Trainer's prepared data loader does
    (`prepare_data_loader` shards, evening out the last batches with early rows, only for more than one process),
    `passes` passes accumulated a step."""
    batches = BatchSampler(SequentialSampler(range(rows)), micro, drop_last=False)
    found = []
    for process in range(processes):
        shard = BatchSamplerShard(batches, num_processes=processes, process_index=process)
        mine = list(shard if processes > 1 else batches)
        found.append([set().union(*map(set, mine[s : s + passes])) for s in range(0, len(mine), passes)])
    return found


@given(
    rows=st.integers(0, 40),
    micro=st.integers(1, 4),
    passes=st.integers(1, 4),
    processes=st.integers(1, 4),
    epochs=st.sampled_from([0.5, 1.0, 2.0, 3.0]),
    masked_is=st.booleans(),
)
def test_the_rows_named_are_trained_on_in_the_first_step_alone_on_every_process(
    rows, micro, passes, processes, epochs, masked_is
):
    batch_size = micro * passes * processes
    first = first_step_rows(rows, batch_size, epochs, processes, masked_is)
    assert 0 <= first <= min(rows, batch_size)
    if first:
        for steps in steps_of(rows, micro, passes, processes):
            assert all(row not in later for later in steps[1:] for row in range(first)), (steps, first)
    one_pass = epochs <= 1 and not masked_is
    if one_pass and rows <= batch_size:
        assert first == rows  # an iteration of one step: no proximal pass at all
    if one_pass and processes == 1:
        assert first == min(rows, batch_size)
    if not one_pass:
        assert first == 0  # another epoch sees the rows after an update; masked IS counts tokens before the step
