"""A prompt or a training sequence cut to its budget says so (issue #29: never silently)."""

import logging

import pytest

from loraloop.rollout.session import EpisodeSession
from loraloop.store import open_store
from loraloop.train.bc import warn_if_cut
from tests.unit.test_halo_agent import TASK, TextShell


@pytest.fixture
def warnings(caplog):
    logging.getLogger("loraloop").propagate = True  # get_logger keeps loraloop's lines off the root logger
    caplog.set_level(logging.WARNING, logger="loraloop")
    yield caplog
    logging.getLogger("loraloop").propagate = False


def session(tmp_path, budget):
    s = EpisodeSession(
        open_store(f"file://{tmp_path}"), TextShell(), TASK, mode="m", run_id="r", attempt=0, char_budget=budget
    )
    s.start()
    for _ in range(6):
        s.act("Think: list.\nAct: bash\n```bash\nls\n```", source="worker")
        s.prompt()
    return s


def test_a_history_past_the_budget_is_cut_with_one_warning_naming_the_setting(tmp_path, warnings):
    s = session(tmp_path, budget=120)
    cut = [r for r in warnings.records if "the prompt is cut to its budget" in r.getMessage()]
    assert len(cut) == 1 and "LORALOOP_PROMPT_CHAR_BUDGET" in cut[0].getMessage()
    assert f"episode={s.key}" in cut[0].getMessage()
    assert sum(m["role"] == "assistant" for m in s.prompt()) < len(s.turns)


def test_a_history_within_the_budget_is_whole_and_silent(tmp_path, warnings):
    s = session(tmp_path, budget=100_000)
    assert not [r for r in warnings.records if "cut to its budget" in r.getMessage()]
    assert sum(m["role"] == "assistant" for m in s.prompt()) == len(s.turns) == 6


@pytest.mark.parametrize("lengths,cut", [([], 0), ([10], 0), ([2048], 1), ([2047, 2048, 5], 1), ([2048] * 3, 3)])
def test_training_sequences_cut_to_max_length_are_counted_and_said(lengths, cut, warnings):
    assert warn_if_cut(lengths, 2048) == cut
    said = [r.getMessage() for r in warnings.records if "max_length=2048" in r.getMessage()]
    assert said == (
        [
            f"{cut} of {len(lengths)} training sequences reach max_length=2048 tokens and are cut to it "
            "(raise --max_length, or lower LORALOOP_PROMPT_CHAR_BUDGET)"
        ]
        if cut
        else []
    )
