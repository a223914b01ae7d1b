"""The scripted shell expert: replays a task's example solution, then answers with its output or finishes."""

from __future__ import annotations

import time

from loraloop.errors import TaskSkipped
from loraloop.replies import Reply
from loraloop.tasks.shell.format import ShellTask


class ScriptedTeacher:
    """An expert that replays the task's example solution, then answers with its output or finishes."""

    def __init__(self, task: ShellTask) -> None:
        if task.example is None:  # AgentBench's match-only tasks often have none
            raise TaskSkipped(f"task {task.index} has no example solution: the scripted teacher cannot play it")
        self.task, self.example = task, task.example
        self.turn = 0

    def act(self, messages: list[dict[str, str]]) -> Reply:
        """First turn: run the example; second: answer with the output's last line when grading
        reads an answer (ShellTask.uses_answer), else finish."""
        started = time.perf_counter()
        self.turn += 1
        if self.turn == 1:
            code = self.example.source(self.task.scripts_dir).strip()
            if self.example.language == "python":
                code = f"python3 - <<'PYEOF'\n{code}\nPYEOF"
            text = f"Think: I run a command that solves the task.\n\nAct: bash\n\n```bash\n{code}\n```"
        elif self.task.uses_answer:
            observation = messages[-1]["content"]
            output = observation.split("\n\n", 1)[1] if "\n\n" in observation else ""
            lines = [line.strip() for line in output.strip().splitlines() if line.strip()]
            text = f"Think: The output gives the answer.\n\nAct: answer({lines[-1] if lines else ''})"
        else:
            text = "Think: The change is done.\n\nAct: finish"
        return Reply(text, "teacher", "scripted-teacher", (time.perf_counter() - started) * 1000)
