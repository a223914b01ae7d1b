"""Grading as AgentBench does it: `match` on the answer, or a chain of `check` scripts."""

from __future__ import annotations

import re
from collections.abc import Sequence

from loraloop.envs.shell import docker
from loraloop.errors import EnvironmentFailure
from loraloop.tasks.shell.format import CheckEval, MatchEval, Script, ShellTask

INTERPRETERS = {"bash": ["bash", "-s", "--"], "python": ["python3", "-"]}
SCRIPT_TIMEOUT_S = 30.0
CAUSE_CHARS = 300
SEED_VARIABLE = "LORALOOP_SEED"
# Lines a failing script prints that never explain the failure.
NOISE = ("WARNING: apt does not have a stable CLI interface. Use with caution in scripts.",)


def failure_cause(result: docker.ExecResult) -> str:
    """The end of a failed script's stderr (its stdout when stderr says nothing), where the cause
    usually is, without known noise lines; at most CAUSE_CHARS characters."""
    for text in (result.stderr, result.stdout):
        lines = [line for line in text.splitlines() if line.strip() and line.strip() not in NOISE]
        if lines:
            cause = "\n".join(lines)
            return cause if len(cause) <= CAUSE_CHARS else "…" + cause[-CAUSE_CHARS:]
    return "(no output)"


def run_script(
    container: str,
    script: Script,
    task: ShellTask,
    args: Sequence[str] = (),
    timeout: float = SCRIPT_TIMEOUT_S,
    seed: int | None = None,
) -> docker.ExecResult:
    """Run a task script inside the container, its text on stdin and `args` as argv. The episode's seed, when it
    has one, is $LORALOOP_SEED: a task whose init or check draws at random can draw the same for the same seed
    (Gymnasium's `reset(seed=…)`), as the containers themselves share no state to seed."""
    text = script.source(task.scripts_dir)
    env = {SEED_VARIABLE: str(seed)} if seed is not None else None
    return docker.exec_in(container, [*INTERPRETERS[script.language], *args], input=text, timeout=timeout, env=env)


def expected_output(container: str, task: ShellTask, seed: int | None = None) -> str | None:
    """Run the task's example (before the agent acts) when a check needs its output."""
    if not isinstance(task.evaluation, CheckEval) or all(c is not None for c in task.evaluation.checks):
        return None
    if task.example is None:
        raise EnvironmentFailure(f"task {task.index}: a check compares with the example's output, and it has none")
    result = run_script(container, task.example, task, seed=seed)
    if result.returncode != 0:
        raise EnvironmentFailure(
            f"task {task.index}: example solution failed with exit {result.returncode}: {failure_cause(result)}"
        )
    return result.stdout


def grade(container: str, task: ShellTask, answer: str | None, expected: str | None, seed: int | None = None) -> bool:
    """True iff the task is solved: the answer matches, or every check script exits 0."""
    evaluation = task.evaluation
    if isinstance(evaluation, MatchEval):
        if answer is None:
            return False
        given = answer.strip() if evaluation.strip else answer
        if evaluation.regex is not None:
            return re.search(evaluation.regex, given) is not None
        wanted = evaluation.answer or ""  # the format sets answer or regex
        wanted = wanted.strip() if evaluation.strip else wanted
        return given == wanted
    assert isinstance(evaluation, CheckEval)
    values: list[str] = []
    for check in evaluation.checks:
        if check is None:
            values.append(expected or "")
            continue
        result = run_script(container, check, task, [answer or "", *values], seed=seed)
        if result.returncode != 0:
            return False
        values.append(result.stdout)
    return True
