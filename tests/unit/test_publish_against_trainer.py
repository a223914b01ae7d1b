"""publish.against_trainer on hand-made fingerprints: which tokens are compared, the exact gaps, the threshold's
boundary, a token the trainer did not keep, and one prompt or several."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loraloop.serve.publish import LIKELY_LOGPROB, PublishVerificationError, against_trainer

pytestmark = pytest.mark.unit


def test_only_likely_tokens_and_the_top_one_are_compared_exactly():
    served = [{"token_id:1": -0.1, "token_id:2": -2.9, "token_id:3": -6.0}, {"token_id:7": -4.0, "token_id:8": -5.0}]
    trainer = [{"token_id:1": -0.2, "token_id:2": -2.7, "token_id:3": -9.0}, {"token_id:7": -4.25, "token_id:9": -7.0}]
    found = against_trainer(served, trainer, threshold=0.3)
    # prompt 1: tokens 1 and 2 (token 3 is below LIKELY_LOGPROB); prompt 2: only its top token 7
    assert found == {"max_diff": 0.25, "mean_diff": round((0.1 + 0.2 + 0.25) / 3, 4), "threshold": 0.3, "tokens": 3}


def test_a_token_the_trainer_did_not_keep_counts_at_its_lowest_kept_logprob():
    served = [{"token_id:5": -0.5}]
    trainer = [{"token_id:1": -0.1, "token_id:2": -8.0}]  # token 5 is below -8.0 for the trainer
    with pytest.raises(PublishVerificationError, match=r"by up to 7\.500 .*threshold 0\.3"):
        against_trainer(served, trainer, threshold=0.3)


def test_prompt_counts_must_agree():
    with pytest.raises(ValueError):
        against_trainer([{"token_id:1": -0.1}], [{"token_id:1": -0.1}, {"token_id:1": -0.1}], threshold=0.3)


@given(
    prompts=st.lists(
        st.dictionaries(st.integers(0, 50), st.floats(-12, 0), min_size=1, max_size=20), min_size=1, max_size=4
    ),
    shift=st.floats(0, 1),
    threshold=st.floats(0.01, 1),
)
def test_a_uniform_shift_is_refused_exactly_when_it_exceeds_the_threshold(prompts, shift, threshold):
    served = [{f"token_id:{t}": lp for t, lp in p.items()} for p in prompts]
    trainer = [{t: lp - shift for t, lp in p.items()} for p in served]
    likely = sum(max(1, sum(lp >= LIKELY_LOGPROB for lp in p.values())) for p in served)
    if shift > threshold + 1e-9:
        with pytest.raises(PublishVerificationError):
            against_trainer(served, trainer, threshold)
    elif shift < threshold - 1e-9:
        found = against_trainer(served, trainer, threshold)
        assert found["tokens"] == likely and found["max_diff"] == pytest.approx(shift, abs=1e-4)
