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


@pytest.mark.parametrize("key", ["trajectories/m/r/" + "t" * 300 + "__attempt_0.jsonl", "trajectories/m/r/a\x00.jsonl",
                                 "trajectories/../../etc/passwd"])
def test_a_store_key_no_file_could_have_is_a_config_error_without_the_host_folder(tmp_path, key):
    """Finding: a 9,000-character or NUL key reached the file system (OSError, a 500), and `..` was refused with a
    message naming the host's store folder."""
    from loraloop.errors import ConfigError
    from loraloop.store.backends import FileStore

    store = FileStore(tmp_path / "store")
    for call in (lambda: store.put_bytes(key, b"x"), lambda: store.get_bytes(key), lambda: store.exists(key)):
        with pytest.raises(ConfigError) as refused:
            call()
        assert str(tmp_path) not in str(refused.value) and "store" in str(refused.value)
