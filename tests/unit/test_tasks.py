"""Task format validation and registries."""

import json

import pytest

from loraloop.errors import TaskFormatError
from loraloop.task_registry import load_registry, missing_files
from loraloop.tasks.shell.format import CheckEval, MatchEval, parse_shell_task


def test_bundled_registry_has_train_and_test_with_examples():
    registry = load_registry("configs/tasks/os")
    splits = {t.split for t in registry.tasks}
    assert splits == {"train", "test"}
    assert len(registry.tasks) >= 20
    assert all(t.example is not None for t in registry.tasks)
    assert not [m for t in registry.tasks for m in missing_files(t)]
    assert registry.tasks[0].index.startswith("train-")
    assert {t.description for t in registry.select("train")}.isdisjoint(
        {t.description for t in registry.select("test")}
    )


def test_agentbench_forms_parse():
    task = parse_shell_task(
        {
            "description": "d",
            "create": {"local": "default", "init": "echo hi"},
            "evaluation": {"match": {"regex": "^a+$", "strip": False}},
            "example": "echo a",
        },
        file="f.json",
        number=0,
        index="x-00000",
    )
    assert isinstance(task.evaluation, MatchEval) and task.evaluation.regex == "^a+$"
    assert task.init[0].code == "echo hi" and task.example.code == "echo a"
    task = parse_shell_task(
        {
            "description": "d",
            "evaluation": {
                "check": [None, {"language": "python", "file": "check/integer-match.py"}],
                "example": {"code": "nproc"},
            },
        },
        file="f.json",
        number=1,
        index="x-00001",
    )
    assert isinstance(task.evaluation, CheckEval) and task.evaluation.checks[0] is None and task.uses_answer


@pytest.mark.parametrize(
    "raw, field",
    [
        ({"evaluation": {"match": "1"}}, "description"),
        ({"description": "d"}, "evaluation"),
        (
            {"description": "d", "evaluation": {"check": [None, {"language": "perl", "file": "c.pl"}], "example": "x"}},
            "evaluation.check[1].language",
        ),
        ({"description": "d", "evaluation": {"check": [None]}}, "evaluation.example"),
        (
            {"description": "d", "create": {"init": {"code": "a", "file": "b"}}, "evaluation": {"match": "1"}},
            "create.init",
        ),
        ({"description": "d", "labels": "x", "evaluation": {"match": "1"}}, "labels"),
    ],
)
def test_malformed_task_names_file_task_and_field(raw, field):
    with pytest.raises(TaskFormatError) as err:
        parse_shell_task(raw, file="bad.json", number=3, index="i")
    assert "bad.json" in str(err.value) and "task #3" in str(err.value) and f"'{field}'" in str(err.value)


def test_registry_index_naming_and_subsets(tmp_path):
    (tmp_path / "dev.json").write_text(
        json.dumps(
            [
                {"description": "a", "evaluation": {"match": "1"}},
                {"description": "b", "evaluation": {"match": "2"}, "labels": ["x"]},
            ]
        )
    )
    registry = load_registry(tmp_path / "dev.json")
    assert [t.index for t in registry.tasks] == ["dev-00000", "dev-00001"]
    assert [t.index for t in registry.select("x")] == ["dev-00001"]
    with pytest.raises(TaskFormatError, match="subset 'nope'"):
        registry.select("nope")
    picked = registry.select(None, sample_size=1, seed=7)
    assert picked == registry.select(None, sample_size=1, seed=7) and len(picked) == 1


def test_broken_json_names_file_and_line(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('[{"description": "a",\n "evaluation": }]')
    with pytest.raises(TaskFormatError, match=r"t.json: not valid JSON \(line 2"):
        load_registry(path)


def test_validate_a_folder_of_registries_checks_each(tmp_path):
    """configs/tasks holds agentbench-os/ and os/ (shell), miniwob/ (browsergym) and web/ (web) registries: each is
    checked."""
    import os
    import shutil
    import subprocess
    import sys

    def validate(path):
        return subprocess.run(
            [sys.executable, "-m", "loraloop.cli", "tasks", "validate", str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "COLUMNS": "2000"},
        )

    proc = validate("configs/tasks")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 4 and lines[0] == (
        "configs/tasks/agentbench-os/registry.yaml: 1000 valid tasks (train: 900, heldout: 100)"
    )
    assert lines[1].startswith("configs/tasks/miniwob/registry.yaml: ")
    assert lines[2].startswith("configs/tasks/os/registry.yaml: ")
    assert lines[3].startswith("configs/tasks/web/registry.yaml: ") and "valid tasks (train: " in lines[3]
    copy = tmp_path / "tasks"
    shutil.copytree("configs/tasks", copy)
    (copy / "web" / "eval_scripts" / "eval_shop_9.py").unlink()
    broken = validate(copy)
    assert broken.returncode == 1 and f"{copy}/os/registry.yaml: " in broken.stdout
    error = " ".join(broken.stderr.split())
    assert f"1 of 4 registries under {copy} are invalid: {copy}/web/registry.yaml: " in error
    assert "eval_shop_9.py" in error
    alone = validate(copy / "web" / "test" / "shop-9.json")  # a web task outside its registry
    assert alone.returncode == 1 and "no scripts folder is set" in alone.stderr
