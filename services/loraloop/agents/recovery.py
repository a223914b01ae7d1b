"""Recovery policies: when an episode is stuck, a scripted action that gets it moving again.

A trigger (no progress for `patience` steps, the same error twice, a loop; agents/gates.py) makes the
orchestrator take the kind's recovery action (its AgentFacet's `recovery`) instead of asking the worker:
- web (envs/web/halo.py): go back to the page before, or reload the page (after a repeated error, or on the
  first page);
- shell (envs/shell/halo.py): return to the home folder (the cwd reset) and show the last error, so the next
  reply sees it.
The action is written in the env's own syntax and recorded as a step (`action_source: recovery`).
"""

from __future__ import annotations

from collections.abc import Callable

from loraloop.agents import gates
from loraloop.kinds.spec import EnvKind
from loraloop.store.records import Step


def trigger(steps: list[Step], patience: int, canonical: Callable[[str], str | None]) -> str | None:
    """The recovery trigger the steps fire (repeated_error, loop, no_progress), or None."""
    if gates.repeated_error(steps):
        return "repeated_error"
    if gates.looping(steps, canonical):
        return "loop"
    if gates.no_progress(steps, patience):
        return "no_progress"
    return None


def recovery_action(kind: EnvKind, trigger_name: str, steps: list[Step]) -> str | None:
    """The kind's recovery action for the trigger, in the env's action syntax; None for kinds without one."""
    return kind.agent.recovery(trigger_name, steps)
