"""EpisodeState.to_json dumps its plain fields as they are (no dataclasses.asdict copy of the whole session on every
call): the document must be the one asdict gave, and read back to an equal state, for any JSON-shaped content."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loraloop.rollout.states import EpisodeState

pytestmark = pytest.mark.unit

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)
STATES = st.builds(
    EpisodeState,
    episode_id=st.text(min_size=1, max_size=12),
    sample_id=st.text(max_size=6) | st.integers(),
    task_id=st.text(max_size=12),
    attempt=st.integers(0, 99),
    session=st.dictionaries(st.text(max_size=8), JSON, max_size=5),  # empty included
    handle=st.none() | st.dictionaries(st.text(max_size=8), JSON, max_size=3),
    owner=st.text(max_size=8),
    protocol=st.sampled_from(["text", "tools"]),
    ending=st.none() | st.dictionaries(st.text(max_size=8), JSON, max_size=3),
)


@given(STATES)
def test_the_document_is_asdicts_and_reads_back_equal(state):
    assert state.to_json() == json.dumps(asdict(state), ensure_ascii=False)
    assert EpisodeState.from_json(state.to_json()) == state
