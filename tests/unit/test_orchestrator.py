"""The loop's plan and its report over seeds, without a model: a plan that cannot run is refused naming the
value, and the report over seeds gives each experiment's success per seed, mean and sd, with its chart.
The loop itself runs end to end in tests/integration/stack/test_loop.py."""

from __future__ import annotations

import subprocess
import sys

import pytest

from loraloop.errors import ConfigError
from loraloop.evaluate.report import write_learning_report
from loraloop.orchestrator import DEMO_FAMILIES, LoopPlan, demo_plan
from loraloop.task_registry import load_registry


@pytest.mark.parametrize(
    "change, named",
    [
        ({"seeds": ()}, "seeds is empty"),
        ({"epochs": 0}, "epochs=0"),
        ({"lr": -1.0}, "lr=-1.0"),
        ({"eval_rollouts": 0}, "eval_rollouts"),
        ({"batch_size": 0}, "batch_size must be positive, got 0"),
        ({"max_tokens": -5}, "max_tokens must be positive, got -5"),
    ],
)
def test_a_plan_that_cannot_run_is_refused_naming_the_value(change, named):
    with pytest.raises(ConfigError, match=named):
        LoopPlan(**change)


def test_demo_and_loop_plans_share_the_experiments():
    """`loraloop demo` is one seed on the train variants of three task families and their held-out test
    variants, with the default plan's experiments; the families' splits are disjoint and each has tasks."""
    plan = demo_plan()
    assert (plan.teacher, plan.base, plan.tuned, plan.adapter) == ("teacher", "smollm_zero", "smollm_bc", "smollm_bc")
    assert plan.seeds == (42,) and plan.whole_episodes and plan.eval_max_steps == 4 and plan.max_tokens == 80
    registry = load_registry(plan.registry)
    train, test = registry.select(plan.train_subset), registry.select(plan.test_subset)
    assert {t.split for t in train} == {"train"} and {t.split for t in test} == {"test"}
    families = {
        name for name in DEMO_FAMILIES if all(registry.select(f"{split}+family:{name}") for split in ("train", "test"))
    }
    assert len(families) == len(DEMO_FAMILIES) >= 3
    assert {t.description for t in train}.isdisjoint({t.description for t in test})


def test_loop_with_no_seed_is_one_clear_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "loraloop.cli", "loop", "--seeds", ",", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "seeds is empty" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and not any(tmp_path.iterdir())


def test_report_over_seeds_has_mean_sd_and_a_chart(tmp_path):
    rates = {"smollm_zero": [0.0, 0.5], "smollm_bc": [1.0, 0.75]}
    report = write_learning_report(rates, {"smollm_zero": 8, "smollm_bc": 8}, [1, 2], tmp_path, "Learning", "notes")
    lines = report.read_text().splitlines()
    assert lines[0] == "# Learning" and "| seed 1 | seed 2 | mean | sd | episodes |" in lines[2]
    assert "| `smollm_zero` | 0.0% | 50.0% | 25.0% | 35.4% | 8 |" in lines
    assert "| `smollm_bc` | 100.0% | 75.0% | 87.5% | 17.7% | 8 |" in lines
    png = (tmp_path / "learning.png").read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 5000


def test_rl_after_a_turn_trains_on_the_plans_tasks_with_its_eval_limits(tmp_path):
    """The benches' RL runs start from the BC adapter a turn left, on the plan's train and test subsets, and
    play with the plan's reply length and client timeout; a plan without limits keeps the settings'."""
    from pathlib import Path

    from loraloop.settings import Settings

    plan, settings = demo_plan(), Settings(max_tokens=192, request_timeout_s=120.0)
    limited = plan.eval_settings(settings)
    assert (limited.max_tokens, limited.request_timeout_s) == (80, 300.0)
    assert LoopPlan().eval_settings(settings).max_tokens == 192
    cfg = plan.rl_config(settings, tmp_path / "seed-1", iterations=2, adapter_name="x")
    assert (cfg.subset, cfg.eval_subset) == (plan.train_subset, plan.test_subset)
    assert (
        Path(cfg.init_adapter) == tmp_path / "seed-1" / "bc_lora" and Path(cfg.output_dir) == tmp_path / "seed-1" / "rl"
    )
    assert (cfg.iterations, cfg.adapter_name, cfg.dataset_path) == (2, "x", plan.registry)
