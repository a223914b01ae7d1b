"""tau2 tasks: snapshots of the installed tau2-bench (domains, splits, solo mode), and how agent replies parse."""

from __future__ import annotations

import json

import pytest

from loraloop.envs.tau2.protocol import parse_turn
from loraloop.errors import ConfigError, TaskFormatError
from loraloop.task_registry import load_registry
from loraloop.tasks.tau2.snapshot import snapshot, write_snapshot


def test_a_snapshot_is_a_registry_whose_tasks_answer_to_tau2s_ids(tmp_path):
    out = tmp_path / "airline_test.json"
    doc = write_snapshot("airline", "test", out)
    registry = load_registry(out)
    assert (registry.name, registry.env, len(registry.tasks), len(doc["tasks"])) == (
        "tau2-airline-test",
        "tau2",
        20,
        20,
    )
    task = registry.get(doc["tasks"][0]["id"])  # AReaL's tau2 dataset rows name tasks by tau2's own id
    assert task.index == f"airline.{task.id}" and task.split == "test" and task.category == "airline"
    assert task.tau2_task.id == task.id and "db" in task.labels
    assert registry.select("airline") == registry.tasks


def test_solo_snapshots_keep_the_tasks_tau2_can_play_alone():
    doc = snapshot("mock", "base", solo=True)
    assert doc["solo_mode"] and 0 < len(doc["tasks"]) < 9 and all(raw["ticket"] for raw in doc["tasks"])
    with pytest.raises(ConfigError, match="tau2 domain 'airline' has no solo mode"):
        snapshot("airline", "base", solo=True)


@pytest.mark.parametrize(
    "domain, split, message",
    [
        ("banking", "base", "unknown tau2 domain 'banking' \\(known: mock, airline, retail, telecom\\)"),
        ("airline", "dev", "tau2 domain 'airline' has no split 'dev' \\(known: train, test, base\\)"),
    ],
)
def test_an_unknown_domain_or_split_is_refused_naming_the_known_ones(domain, split, message):
    with pytest.raises(ConfigError, match=message):
        snapshot(domain, split)


def test_a_snapshot_with_a_broken_task_fails_naming_file_task_and_field(tmp_path):
    doc = snapshot("mock", "base")
    del doc["tasks"][1]["user_scenario"]
    path = tmp_path / "mock.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(
        TaskFormatError,
        match=rf"{path}: task 'create_task_1_with_env_assertions': field "
        "'user_scenario' must be an object",
    ):
        load_registry(path)


TOOLS = {"create_task", "done"}


@pytest.mark.parametrize(
    "reply, kind, detail",
    [
        ('{"name": "create_task", "arguments": {"title": "x"}}', "tool", {"title": "x"}),
        ('```json\n{"name": "create_task", "arguments": "{\\"title\\": \\"x\\"}"}\n```', "tool", {"title": "x"}),
        ('<tool_call>{"name": "done", "arguments": {}}</tool_call>', "tool", {}),
        ("create_task(user_id='u1', title='x')", "tool", {"user_id": "u1", "title": "x"}),
        ("Your task is created.", "message", "Your task is created."),
        ('{"name": "create_task", "arguments": {', "invalid", "malformed tool call: not valid JSON"),
        (
            '{"name": "delete_task", "arguments": {}}',
            "invalid",
            "unknown tool 'delete_task' (tools: create_task, done)",
        ),
        ('{"name": "create_task", "arguments": [1]}', "invalid", "'arguments' must be an object"),
        ('[{"name": "done"}, {"name": "done"}]', "invalid", "call exactly one tool per turn, got 2"),
        ("  ", "invalid", "the reply is empty"),
    ],
)
def test_replies_parse_into_one_tool_call_one_message_or_an_error(reply, kind, detail):
    turn = parse_turn(reply, TOOLS)
    assert turn.kind == kind
    if kind == "tool":
        assert turn.arguments == detail and json.loads(turn.action())["arguments"] == detail
    else:
        assert detail in turn.text
