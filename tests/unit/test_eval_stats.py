"""Evaluation statistics and the report built from stored episodes: intervals, pass@k, pass^k, McNemar,
per-family counts, the CSV and the charts."""

import csv

import pytest

from loraloop.evaluate.report import summarise, write_report
from loraloop.evaluate.stats import mcnemar, pass_at_k, pass_hat_k, wilson
from loraloop.store.backends import FileStore
from loraloop.store.records import EpisodeEnd, EpisodeStart, Step
from loraloop.store.trajectories import EpisodeRecorder


def test_wilson_interval_matches_the_formula_and_stays_inside_0_1():
    low, high = wilson(8, 10)  # textbook value: 0.4902 .. 0.9433
    assert low == pytest.approx(0.4902, abs=1e-4) and high == pytest.approx(0.9433, abs=1e-4)
    assert wilson(0, 10)[0] == 0.0 and 0.0 < wilson(0, 10)[1] < 0.35  # not the normal approximation's [0, 0]
    assert wilson(10, 10)[1] == pytest.approx(1.0) and wilson(10, 10)[0] > 0.65
    assert wilson(0, 0) == (0.0, 1.0)


def test_pass_at_k_and_pass_hat_k():
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25) and pass_hat_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)  # 1 - C(3,2)/C(4,2) = 1 - 3/6
    assert pass_hat_k(4, 3, 2) == pytest.approx(0.5)  # C(3,2)/C(4,2)
    assert pass_at_k(4, 0, 4) == 0.0 and pass_hat_k(4, 4, 4) == 1.0 and pass_hat_k(4, 3, 4) == 0.0
    with pytest.raises(ValueError, match="k <= n"):
        pass_at_k(2, 1, 3)


def test_mcnemar_exact_p_values():
    assert mcnemar(0, 0) == 1.0
    assert mcnemar(0, 6) == pytest.approx(2 / 64)  # all six discordant pairs one way
    assert mcnemar(3, 3) == 1.0
    assert mcnemar(1, 9) == pytest.approx(2 * 11 / 1024)
    assert mcnemar(9, 1) == mcnemar(1, 9)


def episode(store, mode, task, attempt, success, steps, category, error=None, run="ev", **halo):
    rec = EpisodeRecorder(store, mode, run, task, attempt)
    rec.add(
        EpisodeStart(
            task_id=task,
            mode=mode,
            run_id=run,
            attempt_idx=attempt,
            category=category,
            worker_model=f"{mode}-model",
            first_observation=f"Task: {task}",
        )
    )
    for i in range(steps):
        rec.add(Step(step_idx=i, raw_output="Act: finish"))
    rec.add(EpisodeEnd(success=success, reward=float(success), total_steps=steps, error=error, **halo))
    rec.flush()


@pytest.fixture
def store(tmp_path):
    store = FileStore(tmp_path / "store")
    # base: solves t1 once of 3; t2 never, one attempt an environment error; adapter: t1 always, t2 twice
    for attempt, (base, tuned) in enumerate([(True, True), (False, True), (False, True)]):
        episode(store, "base", "t1", attempt, base, 4, "files")
        episode(store, "tuned", "t1", attempt, tuned, 2, "files")
    for attempt, tuned in enumerate([True, True, False]):
        episode(store, "base", "t2", attempt, False, 8, "text", error="container died" if attempt == 0 else None)
        episode(store, "tuned", "t2", attempt, tuned, 2, "text")
    return store


def test_summary_rows(store):
    """The episode an environment error lost is counted (`errors`) but says nothing about the policy: base's rate,
    interval, families, reward and attempts per task (k) are over the 5 it played."""
    base, tuned = summarise(store, [("base", "ev"), ("tuned", "ev")])
    assert (base.episodes, base.played, base.solved, base.tasks, base.k, base.errors) == (6, 5, 1, 2, 2, 1)
    assert base.success_rate == pytest.approx(1 / 5) and base.interval == wilson(1, 5)
    assert base.pass_at_k == pytest.approx((1 - 1 / 3 + 0.0) / 2) and base.pass_hat_k == pytest.approx(0.0)
    assert tuned.pass_at_k == pytest.approx(1.0) and tuned.pass_hat_k == pytest.approx(0.5)
    assert base.families == {"files": (1, 3), "text": (0, 2)} and tuned.families == {"files": (3, 3), "text": (2, 3)}
    assert base.median_steps == 6 and base.mean_reward == pytest.approx(1 / 5)
    assert tuned.mean_reward == pytest.approx(5 / 6) and tuned.interval == wilson(5, 6)


def test_report_files(store, tmp_path):
    md, rows = write_report(
        store,
        [("base", "ev"), ("tuned", "ev")],
        tmp_path / "report",
        "base vs tuned",
        viewer_url="http://127.0.0.1:8080",
    )
    text = md.read_text()
    assert "[failed](http://127.0.0.1:8080/ui/runs/tuned/ev?outcome=failed)" in text  # the episodes behind a number
    runs = "http://127.0.0.1:8080/ui/runs"  # every count links to the episodes behind it, a zero to none
    assert (
        f"| `base` | base-model | 2 | [6]({runs}/base/ev) | 20.0% ([1]({runs}/base/ev?outcome=solved)/5; 4%–62%) "
        f"| 33.3% (k=2) | 0.0% (k=2) | 6 | 0.200 | [1]({runs}/base/ev?outcome=error) |"
    ) in text
    assert f"| 83.3% ([5]({runs}/tuned/ev?outcome=solved)/6; 44%–97%) |" in text and "| 2 | 0.833 | 0 |" in text
    # paired over the 5 pairs base played (t2's attempt 0 was lost): only the tuned model solved 3 (t1 attempts 1
    # and 2, t2 attempt 1), only base none
    assert "| `tuned` | 5 | 0 | 3 | 0.25 | not significant |" in text
    with (tmp_path / "report" / "report.csv").open() as handle:
        table = list(csv.DictReader(handle))
    assert [r["experiment"] for r in table] == ["base", "tuned"] and table[1]["solved"] == "5"
    for chart in ("success.png", "success_by_family.png", "steps.png"):
        assert (tmp_path / "report" / chart).stat().st_size > 5000


def test_an_eval_id_keeps_its_tasks(tmp_path):
    """The same id with the same plan goes on; with another plan (other tasks) it is refused, naming the flag; so is
    the id of a run no evaluation planned."""
    from loraloop.errors import ConfigError
    from loraloop.evaluate.matrix import claim

    store = FileStore(tmp_path / "store")
    plan = {
        "task_registry": "configs/tasks/os",
        "subset": "test",
        "sample_size": 4,
        "rollouts_per_task": 1,
        "seed": 1,
        "task_seed": 7,
        "temperature": None,
        "experiment": "a",
    }
    assert claim(store, "ev1", plan) is True
    assert claim(store, "ev1", {**plan, "experiment": "b"}) is False  # another experiment on the same tasks
    with pytest.raises(ConfigError, match=r"--eval_id ev1 was run with --sample_size 4, not 8"):
        claim(store, "ev1", {**plan, "sample_size": 8})
    with pytest.raises(ConfigError, match="escapes the store root"):
        claim(store, "..", plan)
    episode(store, "teacher", "t1", 0, True, 1, "files")  # a rollout's run `ev` (not an evaluation's)
    with pytest.raises(ConfigError, match=r"--eval_id ev is the id of runs no evaluation planned \(teacher\)"):
        claim(store, "ev", plan)
    assert not store.exists("evals/ev/plan.json")


def test_the_halo_orchestrators_counts_get_a_table_of_their_own(store, tmp_path):
    """Manager calls and cache hits per experiment (the episodes' end records); a report of plain workers has no
    such table (the fixture's runs above)."""
    for attempt, (calls, hits, misses) in enumerate([(3, 2, 4), (1, 0, 2)]):
        episode(
            store,
            "halo",
            "t1",
            attempt,
            attempt == 0,
            4,
            "files",
            run="hv",
            manager_calls=calls,
            cache_hits=hits,
            cache_misses=misses,
        )
    episode(store, "plain", "t1", 0, False, 4, "files", run="hv")
    md, rows = write_report(store, [("plain", "hv"), ("halo", "hv")], tmp_path / "halo", "halo")
    text = md.read_text()
    assert "## HALO orchestrator (manager, cache)" in text
    assert (
        "| `halo` | 2 | 4 | 2.00 | 2 | 1.00 | 25.0% |" in text and "| `plain` | 1 | 0 | 0.00 | 0 | 0.00 | – |" in text
    )
    with (tmp_path / "halo" / "report.csv").open() as handle:
        halo = list(csv.DictReader(handle))[1]
    assert (halo["manager_calls"], halo["cache_hits"], halo["cache_misses"]) == ("4", "2", "6")
    plain, _ = write_report(store, [("base", "ev")], tmp_path / "plain", "plain")
    assert "HALO orchestrator" not in plain.read_text()


def test_a_row_whose_every_episode_was_lost_has_no_rate_and_the_widest_interval(tmp_path):
    store = FileStore(tmp_path / "store")
    for attempt in range(3):
        episode(store, "base", "t1", attempt, False, 1, "files", error="model server unreachable")
    (row,) = summarise(store, [("base", "ev")])
    assert (row.episodes, row.played, row.errors, row.success_rate, row.interval) == (3, 0, 3, 0.0, (0.0, 1.0))
    assert row.outcomes == {} and row.families == {}
