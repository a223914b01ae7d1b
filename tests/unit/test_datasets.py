"""Dataset export rules: BC ranking, DPO pairs, GRPO action returns, malformed episodes."""

import json

import pytest

from loraloop.datasets.export import export
from loraloop.datasets.grpo import action_reward
from loraloop.datasets.states import canonical_action
from loraloop.errors import ConfigError
from loraloop.store.backends import FileStore
from tests.helpers import LS
from tests.helpers import store_episode as episode

CAT = "Think: read.\nAct: bash\n```bash\ncat /root/a\n```"


def read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture
def store(tmp_path):
    store = FileStore(tmp_path / "store")
    start = "Task: t1"
    episode(store, "t1", 0, 1.0, [(start, LS, None), ("The output of the OS:\n\na", "Act: answer(a)", None)])
    episode(store, "t1", 1, 0.0, [(start, LS, None), ("The output of the OS:\n\na", "Act: answer(b)", None)])
    episode(store, "t1", 2, 0.0, [(start, "Think: hm", "format"), ("fmt", CAT, None), ("x", "Act: answer(c)", None)])
    episode(store, "t2", 0, 1.0, [("Task: t2", "Act: finish", None)])
    return store


def test_canonical_actions_ignore_thoughts_and_format():
    assert canonical_action(LS) == canonical_action("Act: bash\n```bash\nls /root\n```") == "bash: ls /root"
    assert canonical_action('{"name": "answer_action", "arguments": {"answer": "a"}}') == "answer: a"
    assert canonical_action("no action here") is None


def test_all_formats_from_one_pass(store, tmp_path):
    manifest = export(store, "trajectories", tmp_path / "ds", ["bc", "dpo", "grpo"])
    assert manifest["rows"] == {"bc": 3, "dpo": 2, "grpo": 5} and manifest["tasks"] == 2
    assert manifest["episodes"] == 4 and manifest["steps"] == 8 and manifest["runs"] == ["teacher/r"]
    dpo = read(tmp_path / "ds" / "dpo.jsonl")
    aligned = next(r for r in dpo if r["state_key"].startswith("aligned_"))
    assert aligned["chosen"][0]["content"] == "Act: answer(a)" and aligned["rejected"][0]["content"] == "Act: answer(b)"
    assert [m["content"] for m in aligned["prompt"]][-1] == "The output of the OS:\n\na"
    errored = next(r for r in dpo if r["state_key"].startswith("error_"))
    assert errored["chosen"][0]["content"] == LS and errored["rejected"][0]["content"] == "Think: hm"
    grpo = read(tmp_path / "ds" / "grpo.jsonl")
    first = next(r for r in grpo if r["task_id"] == "t1" and len(r["prompt"]) == 2)
    assert first["action_returns"] == {"bash: ls /root": 1.0}  # "Think: hm" does not parse: no return
    second = next(r for r in grpo if r["task_id"] == "t1" and r["action_returns"].get("answer: a") is not None)
    assert second["action_returns"] == {"answer: a": 1.0, "answer: b": 0.0}
    assert action_reward("Act: answer(a)", second["action_returns"]) == 1.0
    assert action_reward("Think: x\nAct: answer(zzz)", second["action_returns"]) == 0.0
    assert action_reward("gibberish", second["action_returns"]) == -1.0
    files = json.loads((tmp_path / "ds" / "manifest.json").read_text())["files"]
    assert set(files) == {"bc.jsonl", "dpo.jsonl", "grpo.jsonl"}


def test_progress_ranked_keeps_the_best_and_pairs_best_with_worst(store, tmp_path):
    episode(store, "t1", 3, 1.0, [("Task: t1", "Act: answer(a)", None)])
    manifest = export(store, "trajectories", tmp_path / "ds", ["bc", "dpo"], pairing="progress_ranked", top_percent=0.2)
    bc = read(tmp_path / "ds" / "bc.jsonl")
    assert [(r["task_id"], r["step_idx"]) for r in bc] == [("t1", 0), ("t2", 0)]  # ceil(4*0.2)=1 for t1
    ranked = [r for r in read(tmp_path / "ds" / "dpo.jsonl") if r["state_key"].startswith("progress_ranked_")]
    assert len(ranked) == 1 and ranked[0]["chosen"][0]["content"] == "Act: answer(a)"
    assert ranked[0]["rejected"][0]["content"] == "Think: hm" and manifest["pairing_strategy"] == "progress_ranked"


def test_malformed_episodes_are_skipped_with_key_and_line(store, tmp_path):
    bad = tmp_path / "store" / "trajectories" / "teacher" / "r" / "t3__attempt_0.jsonl"
    bad.write_text('{"type": "episode_start", "task_id": "t3"}\nnot json\n')
    manifest = export(store, "trajectories", tmp_path / "ds", ["bc"])
    assert manifest["malformed"] == [
        "trajectories/teacher/r/t3__attempt_0.jsonl:2: not JSON (Invalid JSON: expected ident at line 1 column 2)"
    ]
    assert manifest["episodes"] == 4


def test_bad_options_name_the_value(store, tmp_path):
    with pytest.raises(ConfigError, match="--format ppo"):
        export(store, "trajectories", tmp_path / "ds", ["ppo"])
    with pytest.raises(ConfigError, match="--pairing_strategy 'best'"):
        export(store, "trajectories", tmp_path / "ds", ["bc"], pairing="best")
    with pytest.raises(ConfigError, match="--top_percent"):
        export(store, "trajectories", tmp_path / "ds", ["bc"], top_percent=0)


def test_bc_export_keeps_error_free_steps_of_successful_episodes(tmp_path):
    store = FileStore(tmp_path / "store")
    episode(
        store,
        "a",
        0,
        1.0,
        [
            ("Task: a", "bad", "format"),
            ("fmt err", "Act: bash\n```bash\nls\n```", None),
            ("The output of the OS:\n\n3", "Act: answer(3)", None),
        ],
    )
    episode(store, "b", 0, 0.0, [("Task: b", "Act: answer(9)", None)])
    manifest = export(store, "trajectories", tmp_path / "ds", ["bc"])
    rows = [json.loads(line) for line in (tmp_path / "ds" / "bc.jsonl").read_text().splitlines()]
    assert manifest["rows"] == {"bc": 2} and manifest["episodes"] == 2 and manifest["successful_episodes"] == 1
    assert [r["step_idx"] for r in rows] == [1, 2]
    last = rows[1]
    assert last["completion"] == [{"role": "assistant", "content": "Act: answer(3)"}]
    assert [m["content"] for m in last["prompt"]] == [
        "sys",
        "Task: a",
        "bad",
        "fmt err",
        "Act: bash\n```bash\nls\n```",
        "The output of the OS:\n\n3",
    ]
    assert json.loads((tmp_path / "ds" / "manifest.json").read_text())["files"]["bc.jsonl"]


def test_a_shell_export_loads_no_other_kind(tmp_path, store):
    """Exporting shell episodes imports the shell kind only: kinds are loaded when a caller reaches them, so
    the web kind (httpx, browser glue) costs a shell export nothing."""
    import subprocess
    import sys

    code = (
        "import sys; from pathlib import Path; from loraloop.datasets.export import export; "
        "from loraloop.store.backends import FileStore; "
        f"m = export(FileStore({str(tmp_path / 'store')!r}), 'trajectories', Path({str(tmp_path / 'ds')!r}), ['bc']); "
        "assert m['rows']['bc'] > 0, m; "
        "print(sorted(n for n in sys.modules if n.startswith('loraloop.kinds.') and n.count('.') == 2))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert (
        proc.stdout.strip()
        == "['loraloop.kinds.prompts', 'loraloop.kinds.registry', 'loraloop.kinds.shell', 'loraloop.kinds.spec']"
    )


def test_an_unknown_prompt_style_is_named_with_the_known_ones():
    from loraloop.kinds.prompts import build_prompt

    with pytest.raises(ValueError, match=r"unknown prompt style 'bogus' \(known: chat, web\)"):
        build_prompt("bogus", "sys", [], "Task: t", [])
