"""The input rules as the CLI meets them (issue #26): a run id or seed no API takes is one line naming the flag
and the rule, before anything is planned or written."""

import pytest

from tests.helpers import run_cli


@pytest.mark.parametrize(
    "flag,value,rule",
    [
        ("--run_id", "..", "not an identifier"),
        ("--run_id", ".", "not an identifier"),
        ("--task_seed", str(10**30), "less than or equal to 4294967295"),
    ],
)
def test_cli_rollout_run_id_dot_or_dotdot_or_huge_task_seed_is_one_line_naming_the_flag(tmp_path, flag, value, rule):
    store = tmp_path / "store"
    proc = run_cli(
        ["rollout", "--experiment", "teacher", flag, value],
        timeout=120,
        env={"LORALOOP_BROKER_URL": "", "LORALOOP_API_URL": "", "LORALOOP_STORE_URL": f"file://{store}"},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1 and f"{flag}: " in out and rule in out, out
    assert "Traceback" not in out and not store.exists()


@pytest.mark.parametrize(
    "key",
    [
        "trajectories/m/r/" + "t" * 300 + "__attempt_0.jsonl",
        "trajectories/m/r/a\x00.jsonl",
        "trajectories/../../etc/passwd",
    ],
)
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


def test_json_depth_counts_brackets_outside_strings_only():
    """The depth check reads raw bytes: brackets inside strings (escaped quotes too) do not count, so a chat message
    full of them is never refused, while real nesting past the limit is."""
    from loraloop.input_rules import MAX_JSON_DEPTH, json_depth_problem

    text = b'{"content": "[[[[{{{{ \\" ]]]] [[[[' + b"[" * 100 + b'"}'
    assert json_depth_problem(text) is None
    assert json_depth_problem(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH) is None
    assert "nested more than 32 levels" in json_depth_problem(
        b'{"a": ' + b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH + b"}"
    )
