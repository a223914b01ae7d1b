"""The scripted tau2 expert: replays a task's reference tool calls, tells the user what it must, then calls `done`."""

from __future__ import annotations

import json
import time

from loraloop.envs.tau2.protocol import STOP_TOOL
from loraloop.replies import Reply, tool_call_text
from loraloop.tasks.tau2.format import Tau2Task


class ScriptedTau2Teacher:
    """An expert policy for tau2 tasks: tau2's evaluation criteria hold the agent's reference actions (and what to
    communicate), which reach the reward when replayed in order; the calls are written as the text protocol's JSON.
    The calls the user must make on their own tools (telecom) it asks the user for in one message."""

    def __init__(self, task: Tau2Task) -> None:
        self.script = [tool_call_text(action["name"], action.get("arguments") or {}) for action in task.actions]
        if task.user_actions:  # the user's own tools: ask for each call, as an agent would
            self.script.append(
                "Please do this on your device: "
                + "; ".join(f"{a['name']}({json.dumps(a.get('arguments') or {})})" for a in task.user_actions)
            )
        if task.communicate and not task.solo:
            self.script.append(" ".join(task.communicate))
        self.script.append(tool_call_text(STOP_TOOL, {}))
        self.turn = 0

    def act(self, messages: list[dict[str, str]]) -> Reply:
        """The next scripted turn (after the script, `done` again)."""
        started = time.perf_counter()
        text = self.script[min(self.turn, len(self.script) - 1)]
        self.turn += 1
        return Reply(text, "teacher", "scripted-teacher", (time.perf_counter() - started) * 1000)
