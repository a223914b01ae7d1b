"""RL batching and loss on typed episodes built in memory: advantages, packing, what is skipped, the clipped loss."""

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from loraloop.store.records import Adapter, EpisodeEnd, EpisodeStart, Step
from loraloop.store.trajectories import Episode
from loraloop.train.rl_batch import advantages, build_batch, pack
from loraloop.train.rl_trainer import clipped_loss, collate


def episode(task, reward, turns, version=None, status="completed", source="worker"):
    """An episode of `task` whose model turns are (prompt ids, completion ids) pairs."""
    adapter = Adapter(name="rl", version=f"v{version}") if version else None
    steps = [
        Step(step_idx=i, action_source=source, prompt_token_ids=p, completion_token_ids=c, logprobs=[-0.5] * len(c))
        for i, (p, c) in enumerate(turns)
    ]
    return Episode(
        f"trajectories/m/r/{task}__attempt_{len(turns)}.jsonl",
        EpisodeStart(task_id=task, adapter=adapter),
        steps,
        EpisodeEnd(success=reward > 0, reward=reward, status=status),
    )


def test_advantages_are_group_relative_and_none_when_rewards_tie():
    assert advantages([1.0, 0.0, 0.0, 1.0], scale=True) == [1.0, -1.0, -1.0, 1.0]
    assert advantages([1.0, 0.0], scale=False) == [0.5, -0.5]
    assert advantages([0.0, 0.0, 0.0], scale=True) is None


def test_turns_that_extend_the_sequence_pack_into_one_row_with_the_observation_masked():
    first, second = ([1, 2, 3], [4, 5]), ([1, 2, 3, 4, 5, 6, 7], [8, 9])  # 6, 7: the observation
    [(ids, mask, logprobs)] = pack([(p, c, [-0.1] * len(c)) for p, c in (first, second)])
    assert ids == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert mask == [0, 0, 0, 1, 1, 0, 0, 1, 1]
    assert logprobs == [0, 0, 0, -0.1, -0.1, 0, 0, -0.1, -0.1]
    rows = pack([([1, 2], [3], [-1.0]), ([1, 9, 3], [4], [-2.0])])  # re-rendered prompt: not a prefix
    assert [r[0] for r in rows] == [[1, 2, 3], [1, 9, 3, 4]]


def test_batch_counts_what_it_cannot_train_on():
    episodes = [
        episode("a", 1.0, [([1, 2], [3, 4]), ([1, 2, 3, 4, 5], [6])], version=2),
        episode("a", 0.0, [([1, 2], [7])], version=2),
        episode("b", 1.0, [([1], [2])], version=2),
        episode("b", 1.0, [([1], [2])], version=2),  # tie
        episode("c", 1.0, [([1], [2])], version=1),
        episode("c", 0.0, [([1], [2])], version=1),  # stale
        episode("d", 0.0, [([1], [2])], version=2, status="env_error"),
        episode("e", 0.0, [(None, [2])], version=2),
    ]
    rows, stats = build_batch(episodes, version=2, max_staleness=0, scale_rewards=True, max_length=100)
    assert (stats.errored, stats.stale, stats.equal_groups, stats.no_token_ids) == (1, 2, 1, 1)
    assert [(r.task_id, r.advantage) for r in rows] == [("a", 1.0), ("a", -1.0)]
    assert rows[0].input_ids == [1, 2, 3, 4, 5, 6] and sum(rows[0].completion_mask) == 3
    assert stats.sampled_tokens == 4 and stats.versions == {"v2": 6, "v1": 2}
    assert math.isclose(stats.success_rate, 4 / 7)
    rows, stats = build_batch(episodes, version=2, max_staleness=1, scale_rewards=True, max_length=3)
    assert stats.stale == 0 and stats.too_long == 1  # c's group is in now; a's packed 6-token row is too long


@given(
    sampled=st.lists(st.integers(0, 6), min_size=1, max_size=12),
    version=st.integers(0, 6),
    k=st.integers(0, 4),
)
def test_no_episode_older_than_k_versions_reaches_a_batch(sampled, version, k):
    """Asynchronous mode's guarantee, at every boundary (K = 0, staleness exactly K, a base-model episode): an episode
    sampled more than K versions before the one trained is dropped and counted, every other one is kept. Each
    episode is a group of its own task (two rollouts, rewards 1 and 0), so none is dropped for anything else."""
    episodes = [
        episode(f"t{i}", reward, [([1], [2])], version=v or None)
        for i, v in enumerate(sampled)
        for reward in (1.0, 0.0)
    ]
    rows, stats = build_batch(episodes, version=version, max_staleness=k, scale_rewards=True, max_length=100)
    too_old = [v for v in sampled if version - v > k]
    assert stats.stale == 2 * len(too_old)
    assert sorted({r.task_id for r in rows}) == sorted(f"t{i}" for i, v in enumerate(sampled) if version - v <= k)


def test_clipped_loss_pushes_up_tokens_with_positive_advantage_and_clips_far_ratios():
    logprobs = torch.tensor([[-1.0, -1.0]], requires_grad=True)
    loss, stats = clipped_loss(
        logprobs, torch.tensor([[-1.0, -1.0]]), torch.tensor([2.0]), torch.tensor([[1.0, 0.0]]), clip_eps=0.2
    )
    loss.backward()
    assert loss.item() == pytest.approx(-2.0) and stats["ratio_mean"] == pytest.approx(1.0)
    assert logprobs.grad[0, 0] < 0 and logprobs.grad[0, 1] == 0  # masked token gets no gradient
    _, stats = clipped_loss(
        torch.tensor([[0.0]]), torch.tensor([[-1.0]]), torch.tensor([1.0]), torch.tensor([[1.0]]), clip_eps=0.2
    )
    assert stats["clip_fraction"] == 1.0


def test_collate_pads_right_and_masks_padding():
    batch = collate(
        [
            {"input_ids": [5, 6, 7], "completion_mask": [0, 1, 1], "old_logprobs": [0, -1, -2], "advantage": 1.0},
            {"input_ids": [5], "completion_mask": [0], "old_logprobs": [0], "advantage": -1.0},
        ],
        pad_id=0,
    )
    assert batch["input_ids"].tolist() == [[5, 6, 7], [5, 0, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["completion_mask"].tolist() == [[0, 1, 1], [0, 0, 0]]
