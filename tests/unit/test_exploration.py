"""verify-exploration's action comparison and its verdict; an unknown task is one clear line."""

from loraloop.rollout.exploration import compare_actions, verdict
from tests.helpers import run_cli


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
    proc = run_cli(
        ["verify-exploration", "--experiment", "smollm_zero", "--task", "no-such-task"],
        {"LORALOOP_STORE_URL": f"file://{tmp_path}", "LORALOOP_VLLM_URL": "http://127.0.0.1:9/v1"},
    )
    assert proc.returncode == 1
    assert "no task with index 'no-such-task'" in proc.stderr and "Traceback" not in proc.stderr
