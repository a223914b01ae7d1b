"""The manager: a (stronger) model that decides the worker's next action when the orchestrator asks.

The orchestrator (agents/halo.py) asks it on the first steps (a warm start) and then only when a gate
fires (agents/gates.py). It sees the worker's own prompt (kinds/prompts.py) with one note added: why it
is asked and, for a destructive command, what the worker proposed. It replies with a `Reason:` line and the
action, written as the worker writes actions; both are recorded on the step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from loraloop.agents.policy import Policy, Reply
from loraloop.errors import ModelRequestError, ServiceUnavailable

WHY = {
    "warm_start": "The episode is starting: set it on the right track.",
    "repeated_error": "The agent's last two actions failed with the same error.",
    "loop": "The agent is repeating itself: the same action in the same state.",
    "error_streak": "The agent's last actions all failed.",
    "high_stakes": "The next action cannot be undone (a checkout, a sent message, a deletion, a destructive command).",
}
NOTE = (
    "You are the manager supervising this agent. {why}{proposal}\n"
    "Decide the agent's next action. Reply with one line `Reason: <why this action>` and then the action, "
    "written exactly in the format the agent must use."
)
_REASON = re.compile(r"^\s*\**reason\**\s*:\s*(.+?)\s*$", re.I | re.M)
# A manager that does not answer costs the episode nothing but this: no long retry storm on a dead URL.
MANAGER_RETRIES = 1


@dataclass(frozen=True)
class Decision:
    """The manager's answer: the action to take (None: it gave none, the worker acts), why, and its reply."""

    action: str | None
    reason: str | None
    reply: Reply


def parse_decision(text: str) -> tuple[str | None, str | None]:
    """(reason, action) from a manager's reply: the `Reason:` line, and the rest as the action (None if empty)."""
    found = _REASON.search(text)
    reason = found.group(1) if found else None
    action = (text[: found.start()] + text[found.end() :]).strip() if found else text.strip()
    return reason, action or None


def note(gate: str, proposal: str | None = None) -> str:
    """What the manager is told on top of the worker's prompt: why it is asked, and what the agent proposed."""
    return NOTE.format(why=WHY[gate], proposal=f"\nThe agent proposed:\n{proposal}\n" if proposal else "")


def briefing(messages: list[dict[str, str]], gate: str, proposal: str | None = None) -> list[dict[str, str]]:
    """The worker's prompt with the manager's note appended to its last user turn."""
    note_text = note(gate, proposal)
    *head, last = messages
    if last["role"] == "user":
        return [*head, {**last, "content": f"{last['content']}\n\n{note_text}"}]
    return [*messages, {"role": "user", "content": note_text}]


class Manager:
    """Asks `policy` (an OpenAI-compatible model) for a decision; remembers the first outage, after which the
    episode goes on with the worker alone (`down` says why)."""

    def __init__(self, policy: Policy, model: str, url: str) -> None:
        self.policy, self.model, self.url = policy, model, url
        self.down: str | None = None

    def decide(self, messages: list[dict[str, str]], gate: str, proposal: str | None = None) -> Decision:
        """The manager's decision for this gate; ServiceUnavailable (remembered in `down`) when it did not answer."""
        if self.down:
            raise ServiceUnavailable(self.down)
        try:
            reply = self.policy.act(briefing(messages, gate, proposal))
        except (ServiceUnavailable, ModelRequestError) as exc:
            self.down = f"manager {self.model!r} at {self.url} did not answer: {exc}"
            raise ServiceUnavailable(self.down) from exc
        reason, action = parse_decision(reply.text)
        return Decision(action, reason, reply)
