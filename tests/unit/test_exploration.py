"""verify-exploration: the action comparison, and two temperatures on the real vLLM CPU server."""
import json
import os
import subprocess
import sys

import pytest

from loraloop.rollout.exploration import compare_actions, verdict

LORALOOP = [sys.executable, "-m", "loraloop.cli"]
VERIFY = ["verify-exploration", "--experiment", "smollm_zero", "--task_registry", "configs/tasks/os",
          "--task_seed", "123", "--temperature_a", "0.0", "--temperature_b", "0.7", "--compare_steps", "3"]


def run_cli(args, env):
    return subprocess.run(LORALOOP + args, env={**os.environ, **env}, capture_output=True, text=True, timeout=600)


def test_compare_actions_differ_identical_and_shorter():
    differ = compare_actions(["ls", "cat a", "x"], ["ls", "cat b", "x"], 10)
    assert differ.differs and differ.first_difference == 1
    assert verdict(differ) == "exploration OK: action sequences differ at step 2"

    same = compare_actions(["ls", "cat a", "x", "late"], ["ls", "cat a", "x", "other"], 3)
    assert not same.differs and same.compared == 3
    assert verdict(same) == "exploration NOT verified: the first 3 actions are identical"

    shorter = compare_actions(["ls", "finish"], ["ls"], 3)
    assert shorter.first_difference == 1 and shorter.compared == 2
    both_ended = compare_actions(["ls"], ["ls"], 3)
    assert not both_ended.differs and both_ended.compared == 1


def test_unknown_task_is_one_clear_line(tmp_path):
    proc = run_cli(VERIFY + ["--task", "no-such-task"], {"LORALOOP_STORE_URL": f"file://{tmp_path}",
                                                         "LORALOOP_VLLM_URL": "http://127.0.0.1:9/v1"})
    assert proc.returncode == 1
    assert "no task with index 'no-such-task'" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.usefixtures("docker_ready")
def test_two_temperatures_explore_on_vllm(tmp_path, vllm_url):
    proc = run_cli(VERIFY + ["--task", "test-files-00000"],
                   {"LORALOOP_STORE_URL": f"file://{tmp_path}", "LORALOOP_VLLM_URL": vllm_url})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "exploration OK: action sequences differ at step" in proc.stdout
    files = sorted((tmp_path / "trajectories" / "smollm_zero").rglob("*.jsonl"))
    starts = [json.loads(f.read_text().splitlines()[0]) for f in files]
    assert sorted(s["worker_temperature"] for s in starts) == [0.0, 0.7]
    assert {s["seed"] for s in starts} == {123} and {s["task_id"] for s in starts} == {"test-files-00000"}
