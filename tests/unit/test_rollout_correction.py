"""The RL trainer's rollout correction (decoupled PPO) on a hand-made batch: the truncated and masked importance
weights, the mismatch metrics and the loss, checked against numbers worked out by hand."""

import math

import pytest
import torch

from loraloop.errors import ConfigError
from loraloop.rl_loop import correction
from loraloop.train.config import RLConfig
from loraloop.train.rl_trainer import Correction, clipped_loss, rollout_correction

# one sequence of four tokens, the middle two sampled: the trainer gives them 3x and 0.5x the sampler's probability
PROX = torch.tensor([[0.0, math.log(3.0), math.log(0.5), 0.0]])
SAMPLER = torch.zeros(1, 4)
MASK = torch.tensor([[0.0, 1.0, 1.0, 0.0]])


def test_token_level_weights_are_truncated_at_the_threshold_and_the_metrics_are_exact():
    weights, kept, stats = rollout_correction(PROX, SAMPLER, MASK, Correction("token", 2.0))
    assert weights[0].tolist() == pytest.approx([0.0, 2.0, 0.5, 0.0]) and torch.equal(kept, MASK)
    assert stats["rollout_corr/rollout_is_mean"] == pytest.approx(1.75)  # (3 + 0.5) / 2, before truncation
    assert stats["rollout_corr/rollout_is_max"] == pytest.approx(3.0)
    assert stats["rollout_corr/rollout_is_ratio_fraction_high"] == 0.5  # one of the two sampled tokens
    assert stats["rollout_corr/rollout_rs_masked_fraction"] == 0.0
    assert stats["rollout_corr/kl"] == pytest.approx((-math.log(3) - math.log(0.5)) / 2)
    k3 = ((3 - 1 - math.log(3)) + (0.5 - 1 - math.log(0.5))) / 2
    assert stats["rollout_corr/k3_kl"] == pytest.approx(k3)


def test_sequence_level_weight_is_the_product_of_the_sampled_tokens_ratios():
    weights, _, stats = rollout_correction(PROX, SAMPLER, MASK, Correction("sequence", 2.0))
    assert weights[0].tolist() == pytest.approx([0.0, 1.5, 1.5, 0.0])  # 3 x 0.5, under the cap
    assert stats["rollout_corr/rollout_is_ratio_fraction_high"] == 0.0
    capped, _, _ = rollout_correction(PROX, SAMPLER, MASK, Correction("sequence", 1.2))
    assert capped[0].tolist() == pytest.approx([0.0, 1.2, 1.2, 0.0])


def test_masked_is_drops_what_lies_outside_the_band_instead_of_weighting_it():
    weights, kept, stats = rollout_correction(PROX, SAMPLER, MASK, Correction(None, 2.0, "token", 2.0))
    assert kept.tolist() == [[0.0, 0.0, 1.0, 0.0]]  # 3 > 2 is out, 0.5 = 1/2 stays in
    assert weights.tolist() == [[0.0, 0.0, 1.0, 0.0]] and stats["rollout_corr/rollout_rs_masked_fraction"] == 0.5
    _, whole, _ = rollout_correction(PROX, SAMPLER, MASK, Correction(None, 2.0, "sequence", 1.4))
    assert whole.tolist() == [[0.0, 0.0, 0.0, 0.0]]  # the sequence's 1.5 is outside [1/1.4, 1.4]


def test_no_mismatch_means_weights_of_one_and_no_kl():
    weights, _, stats = rollout_correction(SAMPLER, SAMPLER, MASK, Correction("token", 2.0))
    assert torch.equal(weights, MASK) and stats["rollout_corr/kl"] == 0 and stats["rollout_corr/k3_kl"] == 0


def test_the_loss_weighs_each_tokens_clipped_surrogate_and_bypass_is_the_plain_clip():
    logprobs = PROX + torch.tensor([[0.0, 0.1, -0.1, 0.0]])  # the policy moved from the proximal one
    advantages = torch.tensor([1.0])
    weights, kept, _ = rollout_correction(PROX, SAMPLER, MASK, Correction("token", 2.0))
    loss, stats = clipped_loss(logprobs, PROX, advantages, kept, 0.2, weights)
    ratio = [math.exp(0.1), math.exp(-0.1)]  # within the clip for a positive advantage: min(r, clip(r)) = r
    assert float(loss) == pytest.approx(-(2.0 * ratio[0] + 0.5 * ratio[1]) / 2)
    assert stats["ratio_max"] == pytest.approx(ratio[0]) and stats["clip_fraction"] == 0.0
    bypass, _ = clipped_loss(logprobs, SAMPLER, advantages, MASK, 0.2)
    clipped = [min(math.exp(math.log(3) + 0.1), 1.2), math.exp(math.log(0.5) - 0.1)]
    assert float(bypass) == pytest.approx(-sum(clipped) / 2)


@pytest.mark.parametrize(
    "flags, named",
    [
        ({"rollout_is_threshold": 1.0}, "--rollout_is_threshold must be above 1"),
        ({"rollout_rs_threshold": 0.5}, "--rollout_rs_threshold must be above 1"),
        ({"rollout_is": "tok"}, "--rollout_is must be one of token, sequence or none"),
    ],
)
def test_a_correction_that_makes_no_sense_is_refused_naming_the_flag(flags, named):
    with pytest.raises(ConfigError, match=named):
        correction(RLConfig(base_model="m", dataset_path="d", output_dir="o", **flags))


def test_bypass_mode_has_no_correction_and_none_turns_the_weights_off():
    base = {"base_model": "m", "dataset_path": "d", "output_dir": "o"}
    assert correction(RLConfig(**base, bypass_mode=True)) is None
    assert correction(RLConfig(**base)) == Correction("token", 2.0, None, 2.0)  # the default: decoupled, cap 2
    assert correction(RLConfig(**base, rollout_is="none", rollout_rs="sequence")).rollout_is is None
