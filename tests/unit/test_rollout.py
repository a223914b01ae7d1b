"""Rollout plans: the seed rule, experiment configs, and unreachable services named in one line."""

import pytest

from loraloop.errors import ConfigError
from loraloop.rollout.experiments import get_experiment, load_experiments
from loraloop.rollout.sampler import plan_rollout, rollout_seed
from loraloop.task_registry import load_registry
from tests.helpers import run_cli


def test_seed_rule_and_plan():
    assert rollout_seed(123, 2, 1) == 2124
    registry = load_registry("configs/tasks/os")
    exp = get_experiment("configs/experiments.yaml", "teacher")
    specs = plan_rollout(
        registry,
        "configs/tasks/os",
        exp,
        run_id="r",
        subset="test",
        sample_size=3,
        rollouts_per_task=2,
        seed=1,
        task_seed=100,
        temperature=0.7,
    )
    assert len(specs) == 6 and {s.attempt for s in specs} == {0, 1}
    assert [s.seed for s in specs[:2]] == [100, 101] and specs[2].seed == 1100
    assert all(s.temperature == 0.7 and s.mode == "teacher" for s in specs)


def test_bad_experiment_config_names_the_field(tmp_path):
    path = tmp_path / "e.yaml"
    path.write_text("experiments:\n  x:\n    policy: magic\n")
    with pytest.raises(ConfigError, match=r"experiments\.x\.policy: Input should be .openai., .local. or .scripted."):
        load_experiments(path)
    with pytest.raises(ConfigError, match="unknown experiment 'nope'"):
        get_experiment("configs/experiments.yaml", "nope")


def test_unreachable_broker_and_model_are_one_line(tmp_path):
    proc = run_cli(
        ["rollout", "--experiment", "smollm_zero", "--sample_size", "1"],
        {"LORALOOP_VLLM_URL": "http://127.0.0.1:9/v1", "LORALOOP_STORE_URL": f"file://{tmp_path}"},
    )
    assert proc.returncode == 1
    assert "model server unreachable at http://127.0.0.1:9/v1" in proc.stderr and "Traceback" not in proc.stderr
    proc = run_cli(
        ["rollout", "--experiment", "teacher", "--sample_size", "1"],
        {"LORALOOP_BROKER_URL": "redis://127.0.0.1:9/0", "LORALOOP_STORE_URL": f"file://{tmp_path}"},
    )
    assert proc.returncode == 1 and "broker unreachable at redis://127.0.0.1:9/0" in proc.stderr
    assert not list(tmp_path.rglob("*.jsonl"))
