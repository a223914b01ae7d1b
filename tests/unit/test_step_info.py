"""StepInfo, the typed `info` of a step: its end marks the outcome on the step it ends, whatever the turn."""

from hypothesis import given
from hypothesis import strategies as st

from loraloop.envs.base import StepInfo, StepResult


@given(
    turn=st.integers(min_value=1, max_value=10_000),
    status=st.sampled_from(["completed", "round_limit"]),
    success=st.booleans(),
    answer=st.none() | st.text(max_size=20),
    details=st.dictionaries(st.text(min_size=1, max_size=8), st.integers(), max_size=3),
)
def test_end_sets_the_outcome_on_its_step_and_keeps_what_was_there(turn, status, success, answer, details):
    """The first step, the round limit's, any other: num_turns is the step's turn; the action, error and earlier
    details stay; the kind's own details are added, not swapped for."""
    info = StepInfo(turn, "bash", action="ls", error="timeout", details={"kept": True})
    ended = info.end(status, success, answer, details)
    assert ended is info
    assert (info.status, info.success, info.answer, info.num_turns) == (status, success, answer, turn)
    assert (info.action_kind, info.action, info.error) == ("bash", "ls", "timeout")
    assert info.details == {"kept": True, **details}


def test_a_step_that_does_not_end_has_no_outcome_and_unpacks_as_gymnasiums_five():
    """A step going on says nothing of the outcome (None, not False: a reader cannot mistake it for a failure), and
    the result unpacks as Gymnasium's (observation, reward, terminated, truncated, info)."""
    info = StepInfo(1, "click", action="click('12')")
    observation, reward, terminated, truncated, got = StepResult("page", 0.0, False, False, info)
    assert (observation, reward, terminated, truncated, got) == ("page", 0.0, False, False, info)
    assert (got.status, got.success, got.answer, got.num_turns, got.details) == (None, None, None, None, {})
    assert StepInfo(1, "x").details is not StepInfo(1, "y").details  # no dict shared between steps
