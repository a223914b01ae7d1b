"""bench/rl_async.py's wall-clock budget: the version a run had live by a deadline, from its history's rows (an
iteration's version is live at the end of its training plus its publish)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytestmark = pytest.mark.unit
BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def live_by():
    sys.path.insert(0, str(BENCH))  # the script imports its neighbours (results, service) as top-level modules
    try:
        spec = importlib.util.spec_from_file_location("rl_async_bench", BENCH / "rl_async.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH))
    return module.live_by


def row(iteration: int, version: int, trained_until: float, publish_s: float) -> dict:
    return {
        "iteration": iteration,
        "version": f"bench-async-v{version}",
        "train_window": [trained_until - 10, trained_until],
        "publish_s": publish_s,
    }


def test_the_newest_version_published_by_the_deadline_counts(live_by):
    history = [{"iteration": 0, "version": "bench-async-v1"}, row(1, 2, 100.0, 5.0), row(2, 3, 200.0, 5.0)]
    assert live_by(history, 99.0, first=1) == 1  # nothing published yet: the warm start
    assert live_by(history, 105.0, first=1) == 2  # published exactly at the deadline: live
    assert live_by(history, 204.9, first=1) == 2  # trained, not yet published
    assert live_by(history, 205.0, first=1) == 3
    assert live_by(history[:1], 1e12, first=1) == 1  # no iteration at all


def test_an_iteration_that_trained_nothing_keeps_the_version(live_by):
    history = [row(1, 2, 100.0, 5.0), row(2, 2, 150.0, 0.0)]
    assert live_by(history, 1e12, first=1) == 2


@given(
    st.lists(st.tuples(st.floats(0, 1e4), st.floats(0, 100)), max_size=12),
    st.floats(0, 2e4),
    st.floats(0, 2e4),
)
def test_later_deadlines_never_give_an_older_version(live_by, steps, a, b):
    trained, history = 0.0, []
    for i, (gap, publish) in enumerate(steps, start=1):
        trained += gap
        history.append(row(i, i + 1, trained, publish))
    early, late = sorted((a, b))
    got_early, got_late = live_by(history, early, first=1), live_by(history, late, first=1)
    assert 1 <= got_early <= got_late <= len(steps) + 1
    published = [r for r in history if r["train_window"][1] + r["publish_s"] <= late]
    assert got_late == max([1] + [int(r["version"].rsplit("-v", 1)[1]) for r in published])
