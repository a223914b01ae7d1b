"""Grade a finished web episode exactly as REAL does: jmespath, eval scripts and an LLM judge.

Reward = the task's points iff every criterion passes (REAL's WebCloneEvaluator).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any

import jmespath

from loraloop.tasks.web.format import WebEval, WebTask

SCRIPT_TIMEOUT_S = 30
JUDGE_THRESHOLD = 0.8
JUDGE_PROMPT = """
            Given a student's answer and a rubric, help a teacher grade the answer. Keep in mind
            that the student may use different words or phrases to express the same idea.

            Student's answer: {answer}
            Rubric: {rubric}

            Grade the student's answer on a scale of 0 to 1, where 1 means the student's answer matches the rubric. Don't be too strict.
            Please answer only with a floating point number and nothing else.
        """  # noqa: E501 - REAL's judge prompt word for word: a line broken in it would change what the judge reads


@dataclass
class Judge:
    """An OpenAI-compatible model that grades llm_boolean rubrics (REAL uses gpt-4.1)."""

    base_url: str
    model: str
    api_key: str = "EMPTY"
    timeout: float = 60.0

    def grade(self, answer: str, rubric: str) -> tuple[bool, dict]:
        """REAL's fuzzy match: the judge's number above 0.8 passes; a non-number fails, with its text."""
        import openai

        client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key, timeout=self.timeout)
        reply = client.chat.completions.create(
            model=self.model,
            temperature=0.0,
            max_tokens=16,
            messages=[{"role": "user", "content": JUDGE_PROMPT.format(answer=answer, rubric=rubric)}],
        )
        text = (reply.choices[0].message.content or "").strip()
        try:
            score = float(text)
        except ValueError:
            return False, {"error": f"judge reply is not a number: {text[:80]!r}", "judge_output": text}
        return score > JUDGE_THRESHOLD, {"similarity": score, "judge_output": text}


@dataclass
class Grade:
    """The outcome of grading: reward, success and one result per criterion."""

    reward: float
    success: bool
    results: list[dict] = field(default_factory=list)


def run_script(task: WebTask, name: str, state: dict) -> tuple[bool, dict]:
    """Run `python SCRIPT STATE.json` (30 s limit); it passes iff its stdout contains SUCCESS."""
    if name in task.scripts:  # a snapshot carries its scripts inline
        fd, script = tempfile.mkstemp(suffix=".py", prefix=name.removesuffix(".py") + "_")
        with os.fdopen(fd, "w") as f:
            f.write(task.scripts[name])
    else:
        script = str(task.scripts_dir / name) if task.scripts_dir else name
    fd, state_path = tempfile.mkstemp(suffix=".json", prefix="state_")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(state, f)
        proc = subprocess.run(
            [sys.executable, script, state_path], capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_S
        )
    except subprocess.TimeoutExpired:
        return False, {"script": name, "error": f"script {name} timed out after {SCRIPT_TIMEOUT_S} s"}
    finally:
        os.unlink(state_path)
        if name in task.scripts:
            os.unlink(script)
    return "SUCCESS" in proc.stdout.upper(), {
        "script": name,
        "output": proc.stdout.strip()[-500:],
        "stderr": proc.stderr.strip()[-500:] or None,
        "return_code": proc.returncode,
    }


def check(task: WebTask, ev: WebEval, state: dict, answer: str, judge: Judge | None) -> tuple[bool, dict]:
    """One criterion: jmespath result equal to expected_value, a passing script, or the judge's yes."""
    if ev.type == "jmespath":
        try:
            actual: Any = jmespath.search(ev.query, state)
        except jmespath.exceptions.JMESPathError as exc:
            return False, {"query": ev.query, "error": f"{exc}"}
        return actual == ev.expected_value, {
            "query": ev.query,
            "actual_value": actual,
            "expected_value": ev.expected_value,
        }
    if ev.type == "script":
        return run_script(task, ev.script, state)
    if judge is None:
        return False, {"rubric": ev.rubric, "error": "llm_boolean needs a judge (set LORALOOP_JUDGE_URL)"}
    return judge.grade(answer, ev.rubric)


def grade(task: WebTask, state: dict, answer: str = "", judge: Judge | None = None) -> Grade:
    """Grade the final state and the agent's message against every criterion of the task."""
    results = []
    for ev in task.evals:
        passed, info = check(task, ev, state, answer, judge)
        results.append({"type": ev.type, "passed": bool(passed), "description": ev.description, **info})
    success = all(r["passed"] for r in results)
    return Grade(reward=task.points if success else 0.0, success=success, results=results)
