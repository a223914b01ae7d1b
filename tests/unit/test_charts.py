"""Intervals hold their point estimate and every chart the project draws survives the boundaries: 0/n, k/n
and n/n rows, one row, empty series. `make demo` once crashed drawing success.png when the adapter won
10/10: Wilson's upper bound rounded to 0.9999999999999999, below the rate, and matplotlib refused the
negative error bar."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loraloop.charts import (
    error_bars,
    family_chart,
    iteration_chart,
    learning_chart,
    loss_chart,
    rl_curve,
    steps_chart,
    success_chart,
)
from loraloop.evaluate.report import Row
from loraloop.evaluate.stats import wilson

LIMIT = 500


def test_every_wilson_interval_up_to_500_holds_its_rate_exactly():
    """All 125,751 pairs 0 <= k <= n <= 500: lo <= k/n <= hi in floats, inside [0, 1], exact at 0 and n."""
    for n in range(1, LIMIT + 1):
        for k in range(n + 1):
            low, high = wilson(k, n)
            rate = k / n
            assert 0.0 <= low <= rate <= high <= 1.0, (k, n, low, high)
            assert (k > 0 or low == 0.0) and (k < n or high == 1.0), (k, n, low, high)
    assert wilson(0, 0) == (0.0, 1.0)


@given(st.integers(0, LIMIT).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))), st.floats(0.1, 4.0))
def test_wilson_holds_its_rate_at_any_confidence(pair, z):
    k, n = pair
    low, high = wilson(k, n, z)
    assert 0.0 <= low <= (k / n if n else 0.0) <= high <= 1.0


@pytest.mark.parametrize("k, n", [(-1, 3), (4, 3)])
def test_wilson_refuses_impossible_counts(k, n):
    with pytest.raises(ValueError, match=f"successes={k}, n={n}"):
        wilson(k, n)


def row(name: str, solved: int, episodes: int) -> Row:
    return Row(
        name, "m", episodes, solved, 2.0, 0, tasks=episodes, families={"f": (solved, episodes)}, steps=[1] * episodes
    )


BOUNDARY = [row("none", 0, 10), row("some", 3, 10), row("all", 10, 10), row("all30", 30, 30), row("zero", 0, 0)]


@given(
    st.lists(st.integers(0, LIMIT).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))), min_size=1, max_size=6)
)
def test_error_bars_are_never_negative(pairs):
    rows = [row(f"r{i}", k, n) for i, (k, n) in enumerate(pairs)]
    below, above = error_bars(rows)
    assert all(e >= 0 for e in below + above)
    for r, lo, hi in zip(rows, below, above):  # the bars reach the interval's ends
        assert r.success_rate * 100 - lo == pytest.approx(r.interval[0] * 100, abs=1e-9)
        assert r.success_rate * 100 + hi == pytest.approx(r.interval[1] * 100, abs=1e-9)


def drawn(path: Path) -> bool:
    return path.is_file() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 1000


@pytest.mark.parametrize("rows", [BOUNDARY, BOUNDARY[2:3], BOUNDARY[:1]], ids=["0/n,k/n,n/n", "n/n alone", "0/n alone"])
def test_success_family_and_steps_charts_draw_the_boundaries(tmp_path, rows):
    for draw, name in ((success_chart, "success.png"), (family_chart, "family.png"), (steps_chart, "steps.png")):
        draw(rows, tmp_path / name, "boundaries")
        assert drawn(tmp_path / name), name


@settings(max_examples=6, deadline=None)
@given(st.lists(st.integers(0, 40).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))), min_size=1, max_size=4))
def test_success_and_iteration_charts_draw_any_counts(tmp_path_factory, pairs):
    out = tmp_path_factory.mktemp("charts")
    rows = [row(f"r{i}", k, n) for i, (k, n) in enumerate(pairs)]
    success_chart(rows, out / "success.png", "any")
    iteration_chart({"a": list(enumerate(rows)), "b": [(0, rows[-1])]}, out / "iterations.png", "any")
    assert drawn(out / "success.png") and drawn(out / "iterations.png")


def test_iteration_chart_draws_0_k_and_n_of_n(tmp_path):
    iteration_chart(
        {"base": [(0, BOUNDARY[0])], "bc": [(1, BOUNDARY[1]), (2, BOUNDARY[2]), (3, BOUNDARY[3])]},
        tmp_path / "it.png",
        "boundaries",
    )
    assert drawn(tmp_path / "it.png")


@pytest.mark.parametrize(
    "spread",
    [
        {"base": (0.0, 0.0), "bc": (1.0, 0.0)},
        {"base": (0.0, 0.3), "bc": (1.0, 0.4)},
        {"base": (0.5, 0.5), "bc": (0.9, 0.2)},
        {"only": (1.0, 0.0)},
    ],
)
def test_learning_chart_draws_rates_at_0_and_1_with_any_spread(tmp_path, spread):
    learning_chart(spread, tmp_path / "learning.png", "seeds")
    assert drawn(tmp_path / "learning.png")


@pytest.mark.parametrize("losses", [[(1, 0.0)], [(1, 2.5), (2, 0.0)], [(s, 1.0 / s) for s in range(1, 50)]])
def test_loss_chart_draws_one_point_zero_loss_and_a_curve(tmp_path, losses):
    loss_chart(losses, tmp_path / "loss.png", "bc")
    assert drawn(tmp_path / "loss.png")


@pytest.mark.parametrize(
    "train, held_out", [([0.0], [1.0]), ([0.0, 0.5, 1.0], [None, 0.0, 1.0]), ([None], [None]), ([1.0, 1.0], [0.0, 0.0])]
)
def test_rl_curve_draws_0_k_and_n_of_n_and_gaps(tmp_path, train, held_out):
    rl_curve(list(range(len(train))), train, held_out, tmp_path / "rl.png", "rl")
    assert drawn(tmp_path / "rl.png")
