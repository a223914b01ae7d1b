"""`serve.publish.distance`: how far two logprob fingerprints are, on the boundaries (equal, disjoint, one prompt)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loraloop.serve.publish import distance

logprob = st.floats(min_value=-50, max_value=0, allow_nan=False)
top = st.dictionaries(st.text(min_size=1, max_size=3), logprob, min_size=1, max_size=20)
fingerprints = st.lists(top, min_size=1, max_size=4)


@given(fingerprints)
def test_a_fingerprint_is_at_distance_zero_from_itself(a):
    assert distance(a, a) == (0.0, 0.0)


@given(fingerprints.flatmap(lambda a: st.tuples(st.just(a), st.lists(top, min_size=len(a), max_size=len(a)))))
def test_distance_is_symmetric_and_its_mean_is_at_most_its_largest(pair):
    a, b = pair
    largest, mean = distance(a, b)
    assert distance(b, a) == pytest.approx((largest, mean))
    assert 0.0 <= mean <= largest + 1e-12


def test_a_token_only_one_side_lists_counts_at_the_other_sides_floor():
    assert distance([{"a": -1.0, "b": -3.0}], [{"a": -1.0, "c": -2.0}]) == (1.0, 2 / 3)


def test_fingerprints_of_different_prompt_counts_are_an_error():
    with pytest.raises(ValueError):
        distance([{"a": -1.0}], [{"a": -1.0}, {"a": -2.0}])
