"""Recovery policies: when an episode is stuck, a scripted action that gets it moving again.

A trigger (no progress for `patience` steps, the same error twice, a loop; agents/gates.py) makes the
orchestrator take the kind's recovery action instead of asking the worker:
- web: go back to the page before, or reload the page (after a repeated error, or on the first page);
- shell: return to the home folder (the cwd reset) and show the last error, so the next reply sees it.
The action is written in the env's own syntax and recorded as a step (`action_source: recovery`).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable

from loraloop.agents import gates
from loraloop.store.records import Step

NO_ERROR = "no error was recorded"


def trigger(steps: list[Step], patience: int, canonical: Callable[[str], str | None]) -> str | None:
    """The recovery trigger the steps fire (repeated_error, loop, no_progress), or None."""
    if gates.repeated_error(steps):
        return "repeated_error"
    if gates.looping(steps, canonical):
        return "loop"
    if gates.no_progress(steps, patience):
        return "no_progress"
    return None


def inert(text: str, limit: int = 200) -> str:
    """Text safe to echo inside a shell action: one line, no code fences, no `Act:` the parser could take for
    the action itself (an error quoting `Act: finish` must not end the episode)."""
    return " ".join(text.split()).replace("`", "'").replace("Act:", "Act")[:limit]


def recovery_action(kind: str, trigger_name: str, steps: list[Step]) -> str | None:
    """The kind's recovery action for the trigger, in the env's action syntax; None for kinds without one."""
    last = steps[-1] if steps else None
    if kind == "web":
        url = last.url if last else None
        moved = any(step.url != url for step in steps)
        if url and (trigger_name == "repeated_error" or not moved):
            return f"Think: recover by reloading the page.\nAction: goto({url!r})"
        return "Think: recover by going back to the page before.\nAction: go_back()"
    if kind == "shell":
        error = next((s.last_action_error for s in reversed(steps) if s.last_action_error), None) or NO_ERROR
        note = shlex.quote(f"recovery ({trigger_name}); last error: {inert(error)}")
        return (
            "Think: recover: back to the home folder and the last error.\n\n"
            f"Act: bash\n\n```bash\ncd ~ && echo {note}\n```"
        )
    return None
