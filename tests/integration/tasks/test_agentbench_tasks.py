"""Every AgentBench-format fixture task played end to end in real containers: its example solves it and
a wrong answer fails it; the teacher answers check-only tasks whose script reads the answer."""

import subprocess
from pathlib import Path

import pytest

from loraloop.task_registry import load_registry
from loraloop.tasks.shell.format import parse_shell_task
from tests.helpers import outcome_of, play, play_both

TASKS = load_registry(Path("tests/fixtures/agentbench_os")).tasks


@pytest.fixture(scope="session")
def agentbench_images():
    for image in ("loraloop/os-env-packages:latest", "loraloop/os-env-ubuntu:latest"):
        proc = subprocess.run(["docker", "image", "inspect", image], capture_output=True)
        assert proc.returncode == 0, f"image {image} missing: run 'make images'"


@pytest.fixture(scope="module")
def fixture_outcomes(docker_ready, agentbench_images, tmp_path_factory):
    """Every fixture task played (example, then a wrong answer) four episodes at a time, once for the module."""
    from loraloop.settings import Settings

    return play_both(TASKS, Settings(store_url=f"file://{tmp_path_factory.mktemp('store')}"))


@pytest.mark.parametrize("task", TASKS, ids=[t.index for t in TASKS])
def test_every_fixture_task_is_solved_by_its_example_and_fails_when_wrong(task, fixture_outcomes):
    solved, failed = outcome_of(fixture_outcomes, task)
    assert solved.done and solved.info.success, f"{task.index}: example solution did not pass ({solved.info})"
    assert failed.done and not failed.info.success, f"{task.index}: a wrong answer passed"


@pytest.mark.usefixtures("docker_ready")
def test_teacher_answers_check_only_tasks_whose_script_reads_the_answer(settings_for):
    """AgentBench passes the answer as argv[1] to every check: a script reading it needs one."""

    def task(check, example):
        return parse_shell_task(
            {
                "description": "Which number is in /root/n?",
                "create": {"init": "echo 42 > /root/n"},
                "evaluation": {"check": check, "example": example},
            },
            file="f.json",
            number=0,
            index="t-00000",
        )

    reads_python = task(
        [{"language": "python", "code": "import sys\nsys.exit(0 if sys.argv[1].strip() == '42' else 1)"}], "cat /root/n"
    )
    reads_bash = task('[ "$1" = 42 ]', "cat /root/n")
    graded_on_state = task("test -f /root/done", "touch /root/done")
    assert reads_python.uses_answer and reads_bash.uses_answer and not graded_on_state.uses_answer
    for case, answer in ((reads_python, "42"), (reads_bash, "42"), (graded_on_state, None)):
        solved = play(case, settings_for())
        assert solved.info.success and solved.info.answer == answer, solved.info
    assert not play(reads_bash, settings_for(), wrong=True).info.success
