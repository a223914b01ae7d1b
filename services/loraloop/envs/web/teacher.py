"""The scripted web expert: replays a REAL task's `solution` steps, finding each element by role and name."""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Callable

from loraloop.errors import TaskSkipped
from loraloop.replies import Reply
from loraloop.tasks.web.format import ScriptStep, WebTask

_NODE = re.compile(r"^\t*\[(?P<bid>[^\]]+)\] (?P<role>\S+) (?P<name>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")", re.M)


def find_bid(observation: str, role: str, name: str, nth: int = 0) -> str | None:
    """The bid of the nth element with this ARIA role and exact accessible name in an observation."""
    hits = [
        m["bid"]
        for m in _NODE.finditer(observation)
        if m["role"] == role and " ".join(ast.literal_eval(m["name"]).split()) == " ".join(name.split())
    ]
    return hits[nth] if len(hits) > nth else None


def step_action(step: ScriptStep, observation: str, origin: str = "") -> str:
    """The BrowserGym action string for a scripted step on the page the observation shows."""
    if step.do in ("send_msg_to_user", "report_infeasible"):
        return f"{step.do}({step.value!r})"
    if step.do == "goto":
        return f"goto({origin + step.value if step.value.startswith('/') else step.value!r})"
    if step.do in ("go_back", "go_forward", "noop"):
        return f"{step.do}()"
    bid = find_bid(observation, step.role, step.name, step.nth)
    if bid is None:
        return f"report_infeasible({f'no {step.role} named {step.name!r} on the page'!r})"
    if step.do in ("fill", "select_option", "press"):
        return f"{step.do}({bid!r}, {step.value!r})"
    return f"{step.do}({bid!r})"


class ScriptedWebTeacher:
    """An expert policy for web tasks: each turn maps the next solution step onto the current page."""

    def __init__(
        self,
        task: WebTask,
        origin: str = "",
        steps: tuple[ScriptStep, ...] | None = None,
        page: Callable[[], str] | None = None,
    ) -> None:
        self.steps = task.solution if steps is None else steps
        if not self.steps:
            raise TaskSkipped(f"task {task.index} has no solution steps: the scripted teacher cannot play it")
        self.origin = origin
        self.page = page  # the whole current observation (a prompt may cut a long page)
        self.turn = 0

    def act(self, messages: list[dict[str, str]]) -> Reply:
        """Write the next step as `Think:`/`Action:` text for the page in the last message."""
        started = time.perf_counter()
        step = self.steps[min(self.turn, len(self.steps) - 1)]
        self.turn += 1
        action = step_action(step, self.page() if self.page else messages[-1]["content"], self.origin)
        target = f" the {step.role} {step.name!r}" if step.role else ""
        text = f"Think: I {step.do.replace('_', ' ')}{target}.\nAction: {action}"
        return Reply(text, "teacher", "scripted-teacher", (time.perf_counter() - started) * 1000)
