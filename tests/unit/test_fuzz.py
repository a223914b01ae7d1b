"""Hypothesis over what reads untrusted text: the shell and web action parsers, the task loaders and the
trajectory reader. Each either returns its result or raises its own named error, never anything else."""

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loraloop.envs.shell.protocol import parse_action as parse_shell_action
from loraloop.envs.shell.tools import parse_tool_call
from loraloop.envs.web.actions import ActionError
from loraloop.envs.web.actions import parse_action as parse_web_action
from loraloop.errors import TaskFormatError
from loraloop.kinds.registry import parse_any
from loraloop.store.records import EpisodeEnd, EpisodeStart, Step, dump
from loraloop.store.trajectories import MalformedTrajectory, parse_episode
from loraloop.tasks.base import TaskContext

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=5),
    max_leaves=20,
)
SHELL_WORDS = st.sampled_from(
    [
        "Act: bash",
        "Act: answer(",
        "Act: finish",
        "```bash\n",
        "```",
        ")",
        "Think:",
        "\n",
        '{"name": "bash_action", "arguments": {"script": ',
        '"}}',
        "answer_action",
        "\\",
    ]
)
WEB_WORDS = st.sampled_from(
    [
        "click(",
        "fill(",
        "goto(",
        "'12'",
        '"x"',
        ", ",
        ")",
        "send_msg_to_user(",
        "```",
        "noop()",
        "press(",
        "=",
        "__import__('os')",
        "lambda: 0",
        "**{}",
        "\n",
        "scroll(0, 1e308)",
    ]
)


def mixed(words):
    return st.lists(st.one_of(words, st.text(max_size=20)), max_size=12).map("".join)


@FUZZ
@given(mixed(SHELL_WORDS))
def test_the_shell_parsers_always_answer(text):
    action = parse_shell_action(text)
    assert action.kind in ("bash", "answer", "finish", "invalid")
    tool = parse_tool_call(text)
    assert tool is None or tool.kind in ("bash", "answer", "finish", "invalid")


@FUZZ
@given(mixed(WEB_WORDS))
def test_the_web_parser_returns_an_action_or_says_why_not(text):
    try:
        action = parse_web_action(text)
    except ActionError as exc:
        assert str(exc)
    else:
        assert action.name


@FUZZ
@given(JSON)
def test_task_loaders_take_a_task_or_name_what_is_wrong(raw):
    try:
        parse_any(raw, TaskContext(file="fuzz.json", number=1, scripts_dir=Path("/nonexistent")))
    except TaskFormatError as exc:
        assert "fuzz.json" in str(exc)


@FUZZ
@given(JSON, JSON)
def test_task_loaders_with_the_kind_named(shell_raw, web_raw):
    for env, raw in (("shell", shell_raw), ("web", web_raw)):
        try:
            parse_any(raw, TaskContext(file="fuzz.json", number=1), env)
        except TaskFormatError as exc:
            assert "fuzz.json" in str(exc)


GOOD = (
    dump(EpisodeStart(task_id="t", first_observation="o"))
    + dump(Step(step_idx=0, raw_output="a"))
    + dump(EpisodeEnd(success=True, reward=1.0))
)


@FUZZ
@given(
    st.binary(max_size=300)
    | st.lists(JSON, max_size=4).map(lambda rows: "\n".join(json.dumps(r) for r in rows).encode())
)
def test_the_trajectory_reader_reads_or_names_the_key(data):
    try:
        parse_episode("trajectories/m/r/t__attempt_0.jsonl", data)
    except MalformedTrajectory as exc:
        assert str(exc).startswith("trajectories/m/r/t__attempt_0.jsonl")


@FUZZ
@given(st.integers(0, len(GOOD)), st.binary(max_size=8))
def test_a_damaged_episode_is_read_or_named(cut, noise):
    try:
        episode = parse_episode("k.jsonl", GOOD[:cut] + noise + GOOD[cut:])
    except MalformedTrajectory as exc:
        assert str(exc).startswith("k.jsonl")
    else:
        assert episode.start.task_id and episode.end is not None
