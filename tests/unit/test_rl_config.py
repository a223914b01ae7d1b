"""`train rl` refuses, before loading a model or playing an episode, what cannot give a useful run."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loraloop.errors import LoraloopError
from loraloop.rl_loop import RLRun, check_config, checkpointing_for, iterations_ahead, staleness
from loraloop.settings import Settings
from loraloop.train.config import RLConfig
from loraloop.train.rl_batch import Row
from loraloop.train.rl_trainer import step_layout


def cfg(**overrides):
    return RLConfig(
        **{"base_model": "unused", "dataset_path": "tests/fixtures/rl_coin", "output_dir": "unused", **overrides}
    )


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"rollouts_per_task": 1}, r"--rollouts_per_task 1: .* at least 2 per task"),
        ({"lora_r": 64}, r"--lora_r 64 exceeds vLLM's --max-lora-rank 16"),
        ({"experiment": "teacher"}, r"--experiment teacher: RL needs a model policy"),
        ({"experiment": "nope"}, r"unknown experiment 'nope'"),
        ({"subset": "family:nothing"}, r"subset 'family:nothing' matches no task \(known: coin, family:coin"),
        ({"init_adapter": "tests/fixtures"}, r"tests/fixtures is not a PEFT adapter folder"),
        ({"iterations": 0}, r"--iterations must be at least 1"),
        ({"micro_batch_size": 0}, r"--micro_batch_size 0 must divide the batch size 8"),
        ({"micro_batch_size": 3}, r"--micro_batch_size 3 must divide the batch size 8"),
        ({"micro_batch_size": 16}, r"--micro_batch_size 16 must divide the batch size 8"),
        ({"max_staleness": 4}, r"--max_staleness 4: .* newest 5 versions, but vLLM serves at most 4 adapters"),
        ({"max_staleness": -1}, r"--max_staleness and --eval_every must be 0 or more"),
        ({"activation_checkpointing_from": -1}, r"--activation_checkpointing_from -1: a number of tokens, or 0"),
    ],
)
def test_bad_rl_config_is_refused_naming_the_flag(overrides, message):
    with pytest.raises(LoraloopError, match=message):
        check_config(cfg(**overrides), Settings(max_lora_rank=16))


@pytest.mark.parametrize(
    "processes, micro, ok", [(1, 8, True), (2, 4, True), (4, 2, True), (3, 1, False), (8, 2, False)]
)
def test_a_step_that_does_not_split_over_the_training_processes_is_refused(monkeypatch, processes, micro, ok):
    """Under `accelerate launch --num_processes N` (WORLD_SIZE) the step's 8 turns are shared by the processes in
    passes of --micro_batch_size: a count that does not divide them is refused before a model is loaded."""
    monkeypatch.setenv("WORLD_SIZE", str(processes))
    config = cfg(micro_batch_size=micro)
    if ok:
        check_config(config, Settings(max_lora_rank=16))
    else:
        with pytest.raises(LoraloopError, match=rf"on each of the {processes} training processes"):
            check_config(config, Settings(max_lora_rank=16))


@given(batch=st.integers(0, 64), micro=st.integers(0, 16), processes=st.integers(1, 16))
def test_a_step_layout_covers_the_step_exactly_or_is_refused(batch, micro, processes):
    """Every layout `step_layout` gives shares exactly the step's turns (passes of `micro` on each process); it
    refuses exactly the counts that do not split (an empty step and a pass of zero turns included)."""
    layout = step_layout(batch, micro, processes)
    splits = batch >= 1 and micro >= 1 and batch % (micro * processes) == 0
    assert (layout is not None) == splits
    if layout is not None:
        assert layout[0] == micro and layout[0] * layout[1] * processes == batch and layout[1] >= 1


@given(slots=st.integers(1, 8), k=st.integers(0, 8), flag=st.booleans())
def test_staleness_needs_a_served_slot_per_version_a_rollout_may_sample(slots, k, flag):
    """K = --max_staleness (1 with --async alone); K >= 1 is asynchronous mode. A run is refused exactly when vLLM's
    LoRA slots cannot hold the K+1 newest versions its rollouts may sample, the boundary (K+1 = slots) taken."""
    config = cfg(max_staleness=k, async_rollouts=flag)
    assert staleness(config) == (k if k else int(flag))
    settings = Settings(max_lora_rank=16, max_loras=slots)
    if staleness(config) + 1 <= slots:
        check_config(config, settings)
    else:
        with pytest.raises(LoraloopError, match=rf"--max_staleness {staleness(config)}: .* at most {slots} adapters"):
            check_config(config, settings)


@pytest.mark.parametrize(
    "staleness, broker, in_process",
    [(0, "", False), (1, "", True), (2, "", True), (1, "redis://127.0.0.1:9/0", False)],
)
def test_async_mode_says_when_its_episodes_share_the_trainers_process(tmp_path, staleness, broker, in_process):
    """Asynchronous rollouts in this process's threads slow training (the interpreter lock), so `train rl` says so;
    with a broker the episodes play in worker processes (the broker is not reached: a job book connects lazily)."""
    settings = Settings(store_url=f"file://{tmp_path}", broker_url=broker)
    run = RLRun(cfg(max_staleness=staleness, output_dir=str(tmp_path / "out")), settings)
    assert run.overlaps_in_process() is in_process


@given(st.integers(1, 12), st.integers(0, 5), st.data())
def test_async_mode_keeps_the_next_k_iterations_rollouts_out_and_none_more_than_k_ahead(iterations, k, data):
    """The pipeline K deep (issue #30): while iteration i trains, the jobs of i+1..i+K are out, clipped to the run
    (none after the last iteration, none in sync mode, one deep with `--async`); every iteration after the first is
    first submitted by the iteration at most K before it, so its episodes lag the version it trains by K at most,
    and the first is never submitted ahead (it waits: nothing runs before it)."""
    iteration = data.draw(st.integers(0, iterations - 1))
    due = list(iterations_ahead(iteration, k, iterations))
    assert due == list(range(iteration + 1, iteration + 1 + min(k, iterations - 1 - iteration)))
    first_submitted = {}
    for i in range(iterations):
        for later in iterations_ahead(i, k, iterations):
            first_submitted.setdefault(later, i)
    assert 0 not in first_submitted
    assert first_submitted == ({j: max(0, j - k) for j in range(1, iterations)} if k else {})


@given(
    lengths=st.lists(st.integers(1, 4096), max_size=8),
    micro=st.sampled_from([1, 2, 4, 8]),
    border=st.integers(0, 8192),
    always=st.booleans(),
)
def test_activation_checkpointing_turns_on_exactly_for_passes_of_the_border_or_more(lengths, micro, border, always):
    """An iteration checkpoints when its widest forward pass (turns a pass x the longest turn, padded) reaches
    --activation_checkpointing_from tokens, the border itself included; never by length with 0 or with no rows;
    always with --activation_checkpointing."""
    config = cfg(micro_batch_size=micro, activation_checkpointing_from=border, activation_checkpointing=always)
    rows = [Row([0] * n, [1] * n, [0.0] * n, advantage=1.0, task_id=f"t{i}") for i, n in enumerate(lengths)]
    widest = micro * max(lengths, default=0)
    assert checkpointing_for(config, rows) is (always or (border > 0 and bool(rows) and widest >= border))
    if border and rows and not always:  # the boundary, one token either side
        assert checkpointing_for(cfg(micro_batch_size=micro, activation_checkpointing_from=widest), rows)
        assert not checkpointing_for(cfg(micro_batch_size=micro, activation_checkpointing_from=widest + 1), rows)
