"""The input rules as the CLI meets them (issue #26): a run id or seed no API takes is one line naming the flag
and the rule, before anything is planned or written."""
import pytest

from tests.helpers import run_cli


@pytest.mark.parametrize("flag,value,rule", [("--run_id", "..", "not an identifier"),
                                             ("--run_id", ".", "not an identifier"),
                                             ("--task_seed", str(10**30), "less than or equal to 4294967295")])
def test_cli_rollout_run_id_dot_or_dotdot_or_huge_task_seed_is_one_line_naming_the_flag(tmp_path, flag, value, rule):
    store = tmp_path / "store"
    proc = run_cli(["rollout", "--experiment", "teacher", flag, value], timeout=120,
                   env={"LORALOOP_BROKER_URL": "", "LORALOOP_API_URL": "", "LORALOOP_STORE_URL": f"file://{store}"})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and f"{flag}: " in out and rule in out, out
    assert "Traceback" not in out and not store.exists()
