"""Dataset export rules: BC ranking, DPO pairs, GRPO action returns, malformed episodes, S3 sources."""
import json

import pytest

from loraloop.datasets.export import export
from loraloop.datasets.grpo import action_reward
from loraloop.datasets.states import canonical_action
from loraloop.errors import ConfigError
from loraloop.settings import Settings
from loraloop.store import open_store
from loraloop.store.backends import FileStore
from loraloop.store.records import EpisodeEnd, EpisodeStart, Step
from loraloop.store.trajectories import EpisodeRecorder

LS = "Think: look.\nAct: bash\n```bash\nls /root\n```"
CAT = "Think: read.\nAct: bash\n```bash\ncat /root/a\n```"


def episode(store, task, attempt, reward, steps, run="r"):
    """Store an episode: steps are (observation, reply, error) triples."""
    rec = EpisodeRecorder(store, "teacher", run, task, attempt)
    rec.add(EpisodeStart(task_id=task, mode="teacher", run_id=run, category="files", system_prompt="sys",
              examples=[], first_observation=f"Task: {task}"))
    for i, (obs, out, err) in enumerate(steps):
        rec.add(Step(step_idx=i, observation=obs, raw_output=out, last_action_error=err, action_source="worker"))
    rec.add(EpisodeEnd(success=reward > 0, reward=reward, total_steps=len(steps),
                       error_count=sum(bool(s[2]) for s in steps)))
    rec.flush()


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
    manifest = export(store, "trajectories", tmp_path / "ds", ["bc", "dpo"], pairing="progress_ranked",
                      top_percent=0.2)
    bc = read(tmp_path / "ds" / "bc.jsonl")
    assert [(r["task_id"], r["step_idx"]) for r in bc] == [("t1", 0), ("t2", 0)]  # ceil(4*0.2)=1 for t1
    ranked = [r for r in read(tmp_path / "ds" / "dpo.jsonl") if r["state_key"].startswith("progress_ranked_")]
    assert len(ranked) == 1 and ranked[0]["chosen"][0]["content"] == "Act: answer(a)"
    assert ranked[0]["rejected"][0]["content"] == "Think: hm" and manifest["pairing_strategy"] == "progress_ranked"


def test_malformed_episodes_are_skipped_with_key_and_line(store, tmp_path):
    bad = tmp_path / "store" / "trajectories" / "teacher" / "r" / "t3__attempt_0.jsonl"
    bad.write_text('{"type": "episode_start", "task_id": "t3"}\nnot json\n')
    manifest = export(store, "trajectories", tmp_path / "ds", ["bc"])
    assert manifest["malformed"] == ["trajectories/teacher/r/t3__attempt_0.jsonl:2: not JSON "
                                     "(Invalid JSON: expected ident at line 1 column 2)"]
    assert manifest["episodes"] == 4


def test_bad_options_name_the_value(store, tmp_path):
    with pytest.raises(ConfigError, match="--format ppo"):
        export(store, "trajectories", tmp_path / "ds", ["ppo"])
    with pytest.raises(ConfigError, match="--pairing_strategy 'best'"):
        export(store, "trajectories", tmp_path / "ds", ["bc"], pairing="best")
    with pytest.raises(ConfigError, match="--top_percent"):
        export(store, "trajectories", tmp_path / "ds", ["bc"], top_percent=0)


def test_export_reads_an_s3_store(s3_endpoint, tmp_path):
    settings = Settings(s3_endpoint_url=s3_endpoint, s3_access_key="any", s3_secret_key="any")
    s3 = open_store("s3://loraloop-export/p", settings)
    episode(s3, "t9", 0, 1.0, [("Task: t9", LS, None), ("The output of the OS:\n\na", "Act: answer(a)", None)])
    manifest = export(s3, "trajectories", tmp_path / "ds", ["bc", "grpo"])
    assert manifest["rows"] == {"bc": 2, "grpo": 2} and manifest["source"].startswith("s3://loraloop-export/p/")
