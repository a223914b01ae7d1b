"""REAL tasks: the format's validator, the agisdk snapshot and REAL's evaluators (a judge: tests/integration/envs)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from loraloop.envs.web.evaluate import grade
from loraloop.errors import TaskFormatError
from loraloop.task_registry import load_registry
from loraloop.tasks.web.format import parse_web_task
from tests.helpers import REAL_TASK as GOOD


@pytest.mark.parametrize(
    "change, message",
    [
        ({"goal": ""}, "field 'goal' must be a non-empty string"),
        ({"website": {"id": "shop"}}, "field 'website' must be an object with 'id' and 'url'"),
        ({"website": {"id": "shop", "url": "ftp://x"}}, "field 'website.url' must be an http"),
        ({"evals": []}, "field 'evals' must be a non-empty list"),
        ({"evals": [{"type": "regex"}]}, "field 'evals[0].type' must be one of"),
        (
            {"evals": [{"type": "jmespath", "query": "a.[", "expected_value": 1}]},
            "evals[0].query' is not valid jmespath",
        ),
        ({"evals": [{"type": "jmespath", "query": "a"}]}, "evals[0].expected_value' is required"),
        ({"evals": [{"script": "eval_missing.py"}]}, "names script 'eval_missing.py', not found"),
        ({"possible": "yes"}, "field 'possible' must be true or false"),
        ({"solution": [{"do": "teleport"}]}, "field 'solution[0].do' must be one of"),
        ({"solution": [{"do": "click", "role": "button", "name": "Go"}]}, "must end with send_msg_to_user"),
    ],
)
def test_malformed_tasks_name_file_task_and_field(tmp_path, change, message):
    with pytest.raises(
        TaskFormatError, match=message.replace("[", r"\[").replace(".", r"\.").replace("(", r"\(")
    ) as err:
        parse_web_task({**GOOD, **change}, file="tasks/shop-x.json", scripts_dir=tmp_path)
    assert "tasks/shop-x.json" in str(err.value)


def test_bundled_registry_subsets():
    registry = load_registry("configs/tasks/web")
    assert registry.env == "web" and len(registry.tasks) >= 44
    assert {"train", "test", "shopzon", "quickmail", "shopping", "email", "infeasible"} <= set(registry.subsets())
    assert registry.get("loraloop.shop-1") is registry.get("shop-1")  # REAL's bare id works too
    test_shop = registry.select("test+shopping")
    assert test_shop and all(t.split == "test" and t.site_id == "shopzon" for t in test_shop)


def test_snapshot_from_agisdk_is_complete_and_self_contained(tmp_path):
    out = tmp_path / "real_v2_task_registry.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "loraloop.cli",
            "tasks",
            "snapshot",
            "--source",
            "real",
            "--version",
            "v2",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "121 tasks of real v2" in proc.stdout
    doc = json.loads(out.read_text())
    assert len(doc["tasks"]) == 121 and len(doc["eval_scripts"]) == 121
    registry = load_registry(out)
    assert registry.get("v2.gomail-1").evals[0].script == "eval_gomail_1.py"
    assert len(registry.select("shopping")) == sum(t["website"]["id"] == "omnizon" for t in doc["tasks"])
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "loraloop.cli",
            "tasks",
            "snapshot",
            "--version",
            "v9",
            "--out",
            str(tmp_path / "x.json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode != 0 and "no task version 'v9'" in bad.stderr + bad.stdout


def test_committed_snapshot_loads():
    registry = load_registry("configs/real_v2_task_registry.json")
    assert len(registry.tasks) == 121 and registry.tasks[0].scripts


def test_jmespath_is_compared_exactly_as_real_does():
    task = parse_web_task(GOOD, file="t")
    state = {"differences": {"orders": {"added": {"0": {"total": 12.5}}}}}
    assert grade(task, state).success and grade(task, state).reward == 1.0
    assert not grade(task, {"differences": {"orders": {"added": {"0": {"total": "12.5"}}}}}).success
    assert not grade(task, {}).success  # a missing path is None, not an error


def test_snapshot_script_eval_runs_inline_and_fails_an_empty_state():
    task = load_registry("configs/real_v2_task_registry.json").get("v2.gomail-1")
    result = grade(task, {"initialfinaldiff": {}, "differences": {}})
    assert not result.success and result.results[0]["script"] == "eval_gomail_1.py"
    assert "FAILURE" in result.results[0]["output"]


def test_script_timeout_is_a_failed_criterion(tmp_path, monkeypatch):
    (tmp_path / "eval_slow.py").write_text("import time\ntime.sleep(5)\nprint('SUCCESS')\n")
    task = parse_web_task({**GOOD, "evals": [{"script": "eval_slow.py"}]}, file="t", scripts_dir=tmp_path)
    monkeypatch.setattr("loraloop.envs.web.evaluate.SCRIPT_TIMEOUT_S", 1)
    result = grade(task, {})
    assert not result.success and "timed out" in result.results[0]["error"]


def test_llm_boolean_needs_a_judge():
    task = parse_web_task({**GOOD, "evals": [{"type": "llm_boolean", "rubric": "Says 42"}]}, file="t")
    result = grade(task, {}, "42")
    assert not result.success and "needs a judge" in result.results[0]["error"]
