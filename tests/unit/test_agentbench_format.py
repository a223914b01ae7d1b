"""AgentBench's OS-interaction data as published: layout, index names, every task form and import.
The fixture tasks are played in real containers in tests/integration/tasks/test_agentbench_tasks.py."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from loraloop.errors import TaskFormatError
from loraloop.task_registry import load_registry, missing_files
from loraloop.tasks.shell.agentbench import find_layout, import_agentbench_os
from loraloop.tasks.shell.format import CheckEval, MatchEval, parse_shell_task
from tests.helpers import run_cli

FIXTURE = Path("tests/fixtures/agentbench_os")
TASKS = load_registry(FIXTURE).tasks
BY_INDEX = {t.index: t for t in TASKS}


def cli(*args: str) -> subprocess.CompletedProcess:
    """`loraloop ARGS` with a wide terminal, so that messages are not wrapped."""
    return run_cli(args, env={"COLUMNS": "200"}, timeout=120)


# --- layout and index names -------------------------------------------------------------------


def test_layout_is_found_from_the_os_interaction_folder_and_from_its_data_folder(tmp_path):
    layout = find_layout(FIXTURE)
    assert (layout.data, layout.scripts, layout.train) == (
        FIXTURE / "data",
        FIXTURE / "scripts",
        (FIXTURE / "train_0317",),
    )
    assert find_layout(FIXTURE / "data") == layout
    assert find_layout(FIXTURE / "scripts") is None
    assert find_layout(Path("configs/tasks/os")) is None  # our own registry.yaml folder
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.json").write_text("[]")
    assert find_layout(tmp_path) is None  # no scripts/, no dev.json, no numbered set
    from_root, from_data = load_registry(FIXTURE), load_registry(FIXTURE / "data")
    assert [t.index for t in from_root.tasks] == [t.index for t in from_data.tasks]
    assert from_root.name == from_data.name == "agentbench_os"


def test_index_names_and_splits_follow_agentbench_os_yaml():
    indices = [t.index for t in TASKS]
    assert len(TASKS) >= 15 and len(set(indices)) == len(indices)
    # prefix + file stem + "-%05d": dev-001- for data/dev.json, std-00N- for data/N/*.json
    assert indices[:2] == ["dev-001-dev-00000", "dev-001-dev-00001"]
    assert "std-001-logs-00002" in indices and "std-001-users-00000" in indices
    assert "std-002-marker-00000" in indices  # a file holding one task object, not a list
    assert indices[-3:] == [f"train-0317-training-0000{i}" for i in range(3)]  # train_0317/, beside data/
    assert {t.split for t in TASKS} == {"dev", "std-001", "std-002", "train"}
    registry = load_registry(FIXTURE)
    assert {t.index for t in registry.select("std-001")} == {i for i in indices if i.startswith("std-001-")}
    assert {t.category for t in registry.select("std-002")} == {"files", "marker", "processes"}
    assert all(
        t.scripts_dir == FIXTURE / "scripts" / {"dev": "dev", "std-001": "1", "std-002": "2", "train": "7"}[t.split]
        for t in TASKS
    )
    assert not [m for t in TASKS for m in missing_files(t)]


def test_numbered_sets_order_numerically_and_jsonl_files_load(tmp_path):
    data = tmp_path / "os_interaction" / "data"
    for n in (2, 10):
        (data / str(n)).mkdir(parents=True)
        (data / str(n) / "a.json").write_text(json.dumps({"description": f"set {n}", "evaluation": {"match": "x"}}))
    (data / "10" / "b.jsonl").write_text(
        '{"description": "one", "evaluation": {"match": "1"}}\n\n{"description": "two", "evaluation": {"match": "2"}}\n'
    )
    (data / "6-backup.json").write_text("[]")  # not part of any AgentBench set
    (tmp_path / "os_interaction" / "scripts").mkdir()
    registry = load_registry(tmp_path / "os_interaction")
    assert [t.index for t in registry.tasks] == ["std-002-a-00000", "std-010-a-00000"]  # *.json, as os.yaml
    yaml_path = tmp_path / "os_interaction" / "registry.yaml"
    yaml_path.write_text('sets: [{split: x, files: "data/10/*", index_prefix: "std-010-"}]\n')
    assert [t.index for t in load_registry(yaml_path).tasks] == [
        "std-010-a-00000",
        "std-010-b-00000",
        "std-010-b-00001",
    ]


def test_subset_std_selects_every_std_split():
    registry = load_registry(FIXTURE)
    std = registry.select("std")
    assert {t.split for t in std} == {"std-001", "std-002"} and len(std) == 12
    assert registry.select("std-002") == [t for t in std if t.split == "std-002"]
    assert {t.index for t in registry.select("std+users")} == {t.index for t in std if t.category == "users"}
    assert "std" in registry.subsets()
    with pytest.raises(TaskFormatError, match="subset 'st' matches no task"):  # a prefix ends at a dash
        registry.select("st")
    listed = cli("tasks", "list", "--task_registry", str(FIXTURE), "--subset", "std")
    assert listed.returncode == 0 and listed.stdout.count("\n") == 12


def test_a_copy_of_the_training_set_loads_validates_and_imports(tmp_path):
    """training.json with scripts/7/ beside it, as /work/shared/data/agentbench-os-train holds it."""
    copy = tmp_path / "agentbench-os-train"
    shutil.copytree(FIXTURE / "scripts" / "7", copy / "scripts" / "7")
    shutil.copy2(FIXTURE / "train_0317" / "training.json", copy / "training.json")
    registry = load_registry(copy)
    assert [t.index for t in registry.tasks] == [f"train-training-0000{i}" for i in range(3)]
    assert {t.split for t in registry.tasks} == {"train"} and registry.name == "agentbench-os-train"
    assert all(t.scripts_dir == copy / "scripts" / "7" for t in registry.tasks)
    assert not [m for t in registry.tasks for m in missing_files(t)]
    checked = cli("tasks", "validate", str(copy))
    assert checked.returncode == 0 and "3 valid tasks (train: 3)" in checked.stdout, checked.stderr
    out = tmp_path / "registry"
    proc = cli(
        "tasks", "import", "agentbench-os", "--data", str(copy), "--scripts", str(copy / "scripts"), "--out", str(out)
    )
    assert proc.returncode == 0 and "imported 3 valid tasks (train: 3)" in proc.stdout, proc.stderr
    doc = yaml.safe_load((out / "registry.yaml").read_text())
    assert doc["sets"] == [
        {"split": "train", "files": "train/*.json", "scripts": "scripts/7", "index_prefix": "train-"}
    ]
    assert [t.index for t in load_registry(out).tasks] == [t.index for t in registry.tasks]
    alone = load_registry(FIXTURE / "train_0317")  # the train_*/ folder of a checkout on its own
    assert [t.index for t in alone.tasks] == [f"train-0317-training-0000{i}" for i in range(3)]


# --- every form --------------------------------------------------------------------------------


def test_every_init_start_evaluation_and_example_form_loads():
    t = BY_INDEX
    # start: a shell string, {"file"} read from the set's scripts folder, {"language": "bash", "code"}
    assert t["dev-001-dev-00000"].start.startswith("nohup bash -c")
    assert "exec -a data-cruncher" in t["std-002-processes-00000"].start
    assert t["std-002-processes-00001"].start.endswith("> /tmp/ticker.pid")
    # init: a string, {"code"}, {"file"}, {"language": "python", "code"|"file"}, {"language": "bash", "file"}, a list
    assert t["std-001-users-00002"].init[0].code.startswith("useradd")
    assert t["dev-001-dev-00001"].init[0].code.startswith("mkdir")
    assert t["dev-001-dev-00006"].init[0].file == "init/locked-greeter.sh"
    assert (t["dev-001-dev-00002"].init[0].language, t["dev-001-dev-00002"].init[0].file) == ("python", None)
    team = t["std-001-users-00000"].init[0]
    assert (team.language, team.file) == ("python", "init/team.py")
    assert t["std-002-files-00000"].init[0].language == "bash"
    mixed = t["std-001-logs-00002"].init
    assert [(s.language, s.file is not None) for s in mixed] == [("bash", True), ("bash", False), ("python", False)]
    assert [s.language for s in t["dev-001-dev-00007"].init] == ["bash", "bash", "python"]
    # evaluation: match str, match {answer, strip}, match {regex}
    assert t["dev-001-dev-00000"].evaluation == MatchEval(answer="2")
    assert t["dev-001-dev-00006"].evaluation == MatchEval(answer="Greetings-from-opt", strip=False)
    assert t["dev-001-dev-00007"].evaluation.regex == r"^3\.14\.2$"
    # check: [null, file], a single object (not a list), a chain of three, strings, inline python
    assert isinstance(t["dev-001-dev-00001"].evaluation, CheckEval)
    assert t["dev-001-dev-00001"].evaluation.checks[0] is None
    assert t["dev-001-dev-00003"].evaluation.checks[0].file == "check/wordcount.sh"
    assert len(t["std-001-logs-00000"].evaluation.checks) == 3
    assert t["std-001-users-00002"].evaluation.checks[0].code.startswith("[ ")
    assert t["std-002-files-00000"].evaluation.checks[1].language == "python"
    assert t["std-002-files-00000"].evaluation.checks[1].code.startswith("import sys")
    # example: a string, {"code"}, {"file"}, {"language": "python", "code"}, top level beside a match
    assert t["dev-001-dev-00002"].example.code.startswith("du -sh")
    assert t["dev-001-dev-00003"].example.file == "example/wordcount.sh"
    assert t["std-001-users-00000"].example.language == "python"
    assert t["dev-001-dev-00006"].example.code.startswith("chmod u+x")
    # create: local default/packages/ubuntu, image, none at all, and the published list quirk
    assert t["std-001-users-00001"].local == "packages" and t["std-002-marker-00000"].local == "ubuntu"
    assert t["std-002-files-00000"].image == "loraloop/os-env:latest"
    assert t["dev-001-dev-00005"].local is None and t["dev-001-dev-00005"].init == ()
    assert t["dev-001-dev-00004"].local is None and t["dev-001-dev-00004"].init == ()


def test_a_list_create_is_read_as_agentbench_reads_it(caplog):
    raw = {
        "description": "d",
        "create": [None, {"language": "python", "file": "check/integer-match.py"}],
        "evaluation": {"check": [None, {"language": "python", "file": "check/integer-match.py"}], "example": "nproc"},
    }
    task = parse_shell_task(raw, file="quirk.json", number=10, index="i")
    assert task.image is None and task.local is None and task.init == ()
    assert "quirk.json: task #10, field 'create' is a list" in caplog.text


def test_start_file_is_read_relative_to_the_scripts_folder(tmp_path):
    (tmp_path / "init").mkdir()
    (tmp_path / "init" / "bg.sh").write_text("sleep 100 &\n")
    task = parse_shell_task(
        {"description": "d", "start": {"file": "init/bg.sh"}, "evaluation": {"match": "1"}},
        file="f.json",
        number=0,
        index="i",
        scripts_dir=tmp_path,
    )
    assert task.start == "sleep 100 &\n"


@pytest.mark.parametrize(
    "raw, field, words",
    [
        (
            {"description": "d", "start": {"file": "init/none.sh"}, "evaluation": {"match": "1"}},
            "start.file",
            "cannot be read",
        ),
        (
            {"description": "d", "start": {"language": "python", "code": "1"}, "evaluation": {"match": "1"}},
            "start.language",
            "must be 'bash'",
        ),
        ({"description": "d", "start": 3, "evaluation": {"match": "1"}}, "start", "expected a shell string"),
        ({"description": "d", "create": "default", "evaluation": {"match": "1"}}, "create", "must be an object"),
        (
            {"description": "d", "create": {"init": ["echo", 5]}, "evaluation": {"match": "1"}},
            "create.init[1]",
            "expected a shell string",
        ),
        (
            {"description": "d", "create": {"local": 7}, "evaluation": {"match": "1"}},
            "create.local",
            "must be a string",
        ),
        (
            {"description": "d", "evaluation": {"check": [None, {"language": "python"}], "example": "x"}},
            "evaluation.check[1]",
            "exactly one of 'code' or 'file'",
        ),
        (
            {"description": "d", "evaluation": {"check": [None, 4], "example": "x"}},
            "evaluation.check[1]",
            "expected a shell string",
        ),
        (
            {"description": "d", "evaluation": {"check": [None], "example": {"file": 1}}},
            "evaluation.example.file",
            "must be a string",
        ),
        (
            {"description": "d", "evaluation": {"match": {"answer": "1", "strip": "yes"}}},
            "evaluation.match.strip",
            "true or false",
        ),
        ({"description": "d", "evaluation": {"match": 1}}, "evaluation.match", "string or an object"),
    ],
)
def test_malformed_tasks_name_file_task_and_field(tmp_path, raw, field, words):
    with pytest.raises(TaskFormatError) as err:
        parse_shell_task(raw, file="data/3/bad.json", number=4, index="i", scripts_dir=tmp_path)
    message = str(err.value)
    assert message.startswith(f"data/3/bad.json: task #4, field '{field}': ") and words in message


def test_malformed_files_in_a_published_layout_name_the_file(tmp_path):
    root = tmp_path / "os_interaction"
    shutil.copytree(FIXTURE, root)
    (root / "data" / "2" / "broken.json").write_text('[{"description": "a",\n "evaluation": }]')
    with pytest.raises(TaskFormatError, match=r"data/2/broken.json: not valid JSON \(line 2"):
        load_registry(root)
    (root / "data" / "2" / "broken.json").write_text(
        json.dumps(
            [{"description": "ok", "evaluation": {"match": "1"}}, {"description": "", "evaluation": {"match": "1"}}]
        )
    )
    with pytest.raises(TaskFormatError, match=r"data/2/broken.json: task #1, field 'description'"):
        load_registry(root / "data")
    (root / "data" / "2" / "broken.json").unlink()
    (root / "data" / "1" / "lines.jsonl").write_text('{"description": "a", "evaluation": {"match": "1"}}\n{oops\n')
    (root / "registry.yaml").write_text('sets: [{split: s, files: "data/1/*.jsonl", index_prefix: "std-001-"}]\n')
    with pytest.raises(TaskFormatError, match=r"lines.jsonl: not valid JSON \(line 2"):
        load_registry(root)


# --- import ------------------------------------------------------------------------------------


def test_import_writes_a_self_contained_registry_that_loads_like_the_source(tmp_path):
    out = tmp_path / "configs" / "tasks" / "ab-os"
    proc = cli(
        "tasks",
        "import",
        "agentbench-os",
        "--data",
        str(FIXTURE / "data"),
        "--scripts",
        str(FIXTURE / "scripts"),
        "--out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    assert f"imported {len(TASKS)} valid tasks (dev: 8, std-001: 6, std-002: 6, train: 3)" in proc.stdout
    doc = yaml.safe_load((out / "registry.yaml").read_text())
    assert doc["name"] == "ab-os" and doc["env"] == "shell"
    assert doc["sets"] == [
        {"split": "dev", "files": "data/dev.json", "scripts": "scripts/dev", "index_prefix": "dev-001-"},
        {"split": "std-001", "files": "data/1/*.json", "scripts": "scripts/1", "index_prefix": "std-001-"},
        {"split": "std-002", "files": "data/2/*.json", "scripts": "scripts/2", "index_prefix": "std-002-"},
        {"split": "train", "files": "train_0317/*.json", "scripts": "scripts/7", "index_prefix": "train-0317-"},
    ]
    assert (out / "scripts" / "2" / "init" / "spawn-crunchers.sh").is_file()
    assert (out / "train_0317" / "training.json").is_file()
    assert (out / "scripts" / "7" / "check" / "integer-match.py").is_file()
    imported = load_registry(out)
    assert [(t.index, t.split, t.description) for t in imported.tasks] == [
        (t.index, t.split, t.description) for t in TASKS
    ]
    assert all(str(t.scripts_dir).startswith(str(out)) for t in imported.tasks)
    listed = cli("tasks", "list", "--task_registry", str(out), "--subset", "std-002")
    assert listed.returncode == 0 and listed.stdout.count("\n") == 6
    assert cli("tasks", "validate", str(out)).returncode == 0
    again = cli(
        "tasks",
        "import",
        "agentbench-os",
        "--data",
        str(FIXTURE / "data"),
        "--scripts",
        str(FIXTURE / "scripts"),
        "--out",
        str(out),
    )
    assert again.returncode == 1 and "exists and is not empty (add --force" in again.stderr
    assert (
        cli(
            "tasks",
            "import",
            "agentbench-os",
            "--data",
            str(FIXTURE / "data"),
            "--scripts",
            str(FIXTURE / "scripts"),
            "--out",
            str(out),
            "--force",
        ).returncode
        == 0
    )
    unknown = cli("tasks", "import", "webarena", "--data", "x", "--scripts", "y", "--out", str(tmp_path / "w"))
    assert unknown.returncode == 1 and "unknown format 'webarena' (available: agentbench-os)" in unknown.stderr


def test_import_writes_nothing_when_the_source_is_broken(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(FIXTURE, source)
    (source / "scripts" / "1" / "init" / "team.py").unlink()
    out = tmp_path / "out"
    with pytest.raises(TaskFormatError, match=r"std-001-users-00000: missing script .*scripts/1/init/team.py"):
        import_agentbench_os(source / "data", source / "scripts", out)
    assert not out.exists()
    with pytest.raises(TaskFormatError, match="neither dev.json, numbered set folders .* nor a training set"):
        import_agentbench_os(source / "scripts", source / "scripts", out)
    proc = cli(
        "tasks",
        "import",
        "agentbench-os",
        "--data",
        str(tmp_path / "none"),
        "--scripts",
        str(source / "scripts"),
        "--out",
        str(out),
    )
    assert proc.returncode == 1 and "--data" in proc.stderr and "not a folder" in proc.stderr
