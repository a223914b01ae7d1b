"""The RL difficulty-pool sampler (train/task_pools.py): pools from last-group success rates, the shares of an
iteration each pool gets, the fill when the normal pool runs short, and the rules' errors; `id:` subsets."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loraloop.errors import ConfigError
from loraloop.rl_loop import check_config
from loraloop.settings import Settings
from loraloop.task_registry import load_registry
from loraloop.train.config import RLConfig
from loraloop.train.task_pools import POOLS, PoolRules, draw, last_rates, pool_of

pytestmark = pytest.mark.unit
RULES = PoolRules()


def test_pools_follow_the_last_groups_rate_and_unplayed_tasks_are_normal():
    rates = last_rates([("a", True), ("a", True), ("b", False), ("b", False), ("c", True), ("c", False)])
    assert rates == {"a": 1.0, "b": 0.0, "c": 0.5}
    assert [pool_of(rates.get(t), RULES) for t in "abcd"] == ["easy", "hard", "normal", "normal"]
    loose = PoolRules(easy_border=0.8, hard_border=0.2)  # prime-rl's borders
    assert [pool_of(r, loose) for r in (0.8, 0.79, 0.2, 0.21)] == ["easy", "normal", "hard", "normal"]


def test_an_iteration_draws_its_shares_from_the_outer_pools_and_the_rest_from_the_normal_one():
    tasks = [f"t{i:02d}" for i in range(30)]
    rates = {t: 1.0 for t in tasks[:10]} | {t: 0.0 for t in tasks[10:20]}  # 10 easy, 10 hard, 10 normal
    got = draw(tasks, rates, 10, seed=3, rules=RULES)
    assert got.drawn == {"easy": 1, "normal": 8, "hard": 1} and got.held == {"easy": 10, "normal": 10, "hard": 10}
    assert got.summary() == "easy 1/10, normal 8/10, hard 1/10"
    assert got.tasks == sorted(got.tasks) and len(set(got.tasks)) == 10  # in the registry's order, distinct
    assert draw(tasks, rates, 10, seed=3, rules=RULES) == got  # a run that goes on draws the same again
    assert draw(tasks, rates, 10, seed=4, rules=RULES).tasks != got.tasks


def test_easy_and_hard_fill_in_when_the_normal_pool_runs_short():
    tasks = ["a", "b", "c", "d", "e"]
    got = draw(tasks, {"a": 1.0, "b": 1.0, "c": 0.0, "d": 0.0}, 4, seed=0, rules=RULES)
    assert got.drawn["normal"] == 1 and got.drawn["easy"] + got.drawn["hard"] == 3 and len(got.tasks) == 4


@given(
    rates=st.lists(st.sampled_from([None, 0.0, 0.25, 0.5, 1.0]), min_size=0, max_size=40),
    size=st.integers(1, 50),
    seed=st.integers(0, 2**32),
    easy=st.floats(0, 0.5),
    hard=st.floats(0, 0.5),
)
def test_any_draw_is_distinct_tasks_of_the_list_as_many_as_asked_or_all(rates, size, seed, easy, hard):
    tasks = [f"t{i}" for i in range(len(rates))]
    known = {t: r for t, r in zip(tasks, rates) if r is not None}
    rules = PoolRules(easy_fraction=easy, hard_fraction=hard)
    got = draw(tasks, known, size, seed, rules)
    assert len(got.tasks) == len(set(got.tasks)) == min(size, len(tasks)) == sum(got.drawn.values())
    assert set(got.tasks) <= set(tasks) and got.tasks == [t for t in tasks if t in set(got.tasks)]
    for pool in POOLS:
        assert 0 <= got.drawn[pool] <= got.held[pool]
    n = min(size, len(tasks))
    for pool, share in (("easy", easy), ("hard", hard)):  # the floor: the share, as far as the pool holds
        assert got.drawn[pool] >= min(got.held[pool], round(n * share))


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        ({"sampler": "greedy"}, "--sampler 'greedy'"),
        ({"sampler": "difficulty-pool", "easy_fraction": 1.5}, "--easy_fraction must be between 0 and 1, got 1.5"),
        ({"sampler": "difficulty-pool", "easy_fraction": 0.7, "hard_fraction": 0.6}, "at most 1, got 0.7 + 0.6"),
        ({"sampler": "difficulty-pool", "easy_border": 0.3, "hard_border": 0.5}, "--hard_border (0.5) must be below"),
    ],
)
def test_bad_sampler_flags_are_refused_naming_the_flag_and_value(flags, named):
    with pytest.raises(ConfigError) as caught:
        check_config(
            RLConfig(base_model="m", output_dir="o", dataset_path="tests/fixtures/rl_coin", **flags), Settings()
        )
    assert named in str(caught.value)


def test_an_id_term_selects_tasks_by_index_within_the_other_terms():
    registry = load_registry("configs/tasks/os")
    first, second = registry.select("train")[:2]
    picked = registry.select(f"train+id:{first.index},id:{second.index}")
    assert [t.index for t in picked] == [first.index, second.index]
    assert (
        registry.select(f"test+id:{first.index},id:{registry.select('test')[0].index}") == registry.select("test")[:1]
    )


def test_the_iteration_table_has_a_pools_column_only_when_pools_drew_the_tasks(tmp_path):
    from loraloop.rl_loop import write_report

    rows = [{"iteration": 0, "held_out": 0.0}, {"iteration": 1, "success_rate": 0.5}]
    for sampler, drawn in (("uniform", None), ("difficulty-pool", "easy 1/3, normal 6/9, hard 1/2")):
        cfg = RLConfig(base_model="m", output_dir=str(tmp_path), dataset_path="x", sampler=sampler)
        write_report([rows[0], {**rows[1], **({"pools": drawn} if drawn else {})}], tmp_path, cfg)
        table = (tmp_path / "rl_report.md").read_text()
        assert ("| pools |" in table) == (drawn is not None) and ("difficulty pools" in table) == (drawn is not None)
        assert drawn is None or f"| {drawn} |" in table
