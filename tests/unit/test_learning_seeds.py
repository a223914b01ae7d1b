"""bench/learning_seeds.py: one table over seeds from learning runs that did not share a store (a summary.json
each): plans that differ refused naming the field, a seed held twice refused, base pooled once, the pooled
interval holding the pooled rate at every boundary (0 %, 100 %, one seed)."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytestmark = pytest.mark.unit
BENCH = Path(__file__).resolve().parents[2] / "bench"
PLAN = {"name": "miniwob", "seeds": "1", "teacher_rollouts": 3, "eval_tasks": 40}


@pytest.fixture(scope="module")
def merge():
    spec = importlib.util.spec_from_file_location("learning_seeds_bench", BENCH / "learning_seeds.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rows(base: int, bc: int, rl: int, n: int = 40) -> dict:
    return {label: {"solved": k, "episodes": n} for label, k in (("base", base), ("BC", bc), ("BC+RL", rl))}


def summary(tmp_path: Path, seed: str, held: dict, plan: dict | None = None, machine: dict | None = None) -> Path:
    path = tmp_path / f"summary-{seed}.json"
    body = {"plan": {**(plan or PLAN), "seeds": seed}, "stages_s": {"eval base": 10.0}, "seeds": {seed: held}}
    if machine is not None:
        body["machine"] = machine
    path.write_text(json.dumps(body))
    return path


def test_two_runs_make_one_table_with_base_pooled_once(merge, tmp_path):
    one = summary(tmp_path, "1", rows(0, 10, 7), machine={"dtype": "float32"})
    two = summary(tmp_path, "2", rows(0, 12, 14), machine={"dtype": "bfloat16"})
    plan, sets, origins = merge.load([one, two])
    lines, spread = merge.table(sets["seeds"])
    text = "\n".join(lines)
    assert "| base | 0/40 | 0/40 | 0.0% | 0.0% | 0/40 = 0.0%" in text  # greedy base: one evaluation, not 80 episodes
    assert "| BC | 10/40 | 12/40 | 27.5% |" in text and "22/80 = 27.5%" in text
    assert "21/80 = 26.2%" in text
    assert spread["BC+RL"][0] == pytest.approx((7 / 40 + 14 / 40) / 2)
    assert "float32" in origins[0] and "bfloat16" in origins[1] and "seeds" not in plan


def test_plans_that_differ_are_refused_naming_the_field_and_both_files(merge, tmp_path):
    one = summary(tmp_path, "1", rows(0, 10, 7))
    two = summary(tmp_path, "2", rows(0, 12, 14), plan={**PLAN, "teacher_rollouts": 10})
    with pytest.raises(
        SystemExit, match=r"summary-2\.json: plan field 'teacher_rollouts' is 10, .*summary-1\.json has 3"
    ):
        merge.load([one, two])


def test_a_seed_in_two_summaries_is_refused(merge, tmp_path):
    one = summary(tmp_path, "1", rows(0, 10, 7))
    again = tmp_path / "again.json"
    again.write_text(one.read_text())
    with pytest.raises(SystemExit, match=r"again\.json: seed 1 of 'seeds' is in another summary too"):
        merge.load([one, again])


def test_a_file_that_is_no_summary_is_refused_naming_it(merge, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    with pytest.raises(SystemExit, match=r"bad\.json: not a readable summary\.json"):
        merge.load([bad])
    bad.write_text("[]")
    with pytest.raises(SystemExit, match=r"bad\.json: no 'plan' object"):
        merge.load([bad])


@given(
    st.integers(min_value=1, max_value=50).flatmap(
        lambda n: st.tuples(st.just(n), st.lists(st.integers(min_value=0, max_value=n), min_size=1, max_size=4))
    )
)
def test_the_pooled_interval_holds_the_pooled_rate_at_every_boundary(merge, case):
    n, solved = case  # 0 %, 100 %, one seed and several
    per_seed = {str(s): rows(0, k, k, n) for s, k in enumerate(solved, 1)}
    lines, spread = merge.table(per_seed)
    bc = next(line for line in lines if line.startswith("| BC |"))
    pooled = bc.rsplit("|", 2)[1]
    rate = sum(solved) / (n * len(solved))
    low, high = (float(x) / 100 for x in pooled.split("(")[1].rstrip(") ").replace("%", "").split("–"))
    assert low - 0.005 <= rate <= high + 0.005 and 0 <= low <= high <= 1
    mean, sd = spread["BC"]
    assert 0 <= mean <= 1 and sd >= 0 and (sd == 0) == (len(set(solved)) == 1)


def test_the_chart_and_report_are_written(merge, tmp_path, monkeypatch):
    one = summary(tmp_path, "1", rows(0, 40, 40))  # 100 %: the chart's error bar must stay inside [0, 1]
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["learning_seeds.py", str(one), "--out", str(out)])
    merge.main()
    assert (out / "learning.png").stat().st_size > 0
    assert "| BC | 40/40 | 100.0% | 0.0% | 40/40 = 100.0%" in (out / "report.md").read_text()
