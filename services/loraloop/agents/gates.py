"""When the HALO orchestrator asks for help: the manager's gates and the recovery triggers, over step records.

The kinds' own gates (a web page whose actions cannot be taken back, a destructive shell command) are their
AgentFacet's `high_stakes` and `destructive` (kinds/spec.py). Every check here reads the episode's Step records
(store/records.py) since the last intervention (a manager's decision or a recovery action), so one situation fires
once and the next firing needs fresh evidence.
"""

from __future__ import annotations

from collections.abc import Callable

from loraloop.store.records import Step

LOOP_WINDOW = 6  # steps looked back for a repeated (state, action) pair


Canonical = Callable[[str], "str | None"]  # the env kind's canonical_action: a reply as the env understands it


def action_of(step: Step, canonical: Canonical) -> str:
    """The action a step took as the env understood it (`bash: ls`), else the reply as written."""
    return step.action_text or canonical(step.raw_output) or step.raw_output.strip()


def repeated_error(steps: list[Step]) -> bool:
    """The last two steps failed with the same error."""
    return (
        len(steps) >= 2
        and bool(steps[-1].last_action_error)
        and steps[-1].last_action_error == steps[-2].last_action_error
    )


def error_streak(steps: list[Step], n: int) -> bool:
    """The last `n` steps all failed."""
    return len(steps) >= n and all(step.last_action_error for step in steps[-n:])


def looping(steps: list[Step], canonical: Canonical, window: int = LOOP_WINDOW) -> bool:
    """The last step repeats one of the `window` before it: the same action in the same state (an A-B-A-B cycle
    included), or the same action three times in a row whatever the state."""
    if len(steps) < 2:
        return False
    last = steps[-1]
    earlier = steps[-window - 1 : -1]
    action = action_of(last, canonical)
    same_state = any(action_of(s, canonical) == action and s.obs_hash == last.obs_hash for s in earlier)
    return same_state or (len(steps) >= 3 and len({action_of(s, canonical) for s in steps[-3:]}) == 1)


def no_progress(steps: list[Step], patience: int) -> bool:
    """The last `patience` steps got nowhere: the progress score did not rise (where steps record one), else
    the observation did not change."""
    if len(steps) < patience:
        return False
    window = steps[-patience:]
    scores = [s.progress_score for s in window if s.progress_score is not None]
    if len(scores) == len(window):  # every step scored
        return max(scores) <= scores[0]
    return len({s.next_observation for s in window} | {window[0].observation}) == 1


def trouble(steps: list[Step], canonical: Canonical, streak: int) -> str | None:
    """The first gate the steps fire, of repeated_error, loop and error_streak; None when calm."""
    if repeated_error(steps):
        return "repeated_error"
    if looping(steps, canonical):
        return "loop"
    if error_streak(steps, streak):
        return "error_streak"
    return None
