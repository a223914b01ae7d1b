"""The bundled web task set (configs/tasks/web) is complete: ids, sites, infeasible tasks, eval scripts,
and a solution and a wrong path ending in a final action for every task."""

import json

from tests.helpers import ROOT

TASKS = ROOT / "configs" / "tasks" / "web"
SCRIPTS = TASKS / "eval_scripts"
TASK_FILES = sorted(TASKS.glob("*/*.json"))
FINAL = ("send_msg_to_user", "report_infeasible")


def test_task_set_is_complete():
    tasks = [json.loads(path.read_text()) for path in TASK_FILES]
    assert len({task["id"] for task in tasks}) == len(tasks)
    assert sum(task["id"].startswith("shop-") for task in tasks) >= 22
    assert sum(task["id"].startswith("mail-") for task in tasks) >= 22
    assert sum(not task["possible"] for task in tasks) >= 2
    scripts = [e["script"] for task in tasks for e in task["evals"] if "script" in e]
    assert len(scripts) >= 6 and all((SCRIPTS / name).is_file() for name in scripts)
    for path, task in zip(TASK_FILES, tasks):
        assert path.stem == task["id"] and task["version"] == "loraloop" and task["points"] == 1
        assert task["solution"][-1]["do"] in FINAL and task["wrong_path"][-1]["do"] in FINAL
