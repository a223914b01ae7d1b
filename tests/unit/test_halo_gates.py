"""The manager's gates, the recovery triggers and actions, and the manager's reply parsing and outage path."""

import pytest

from loraloop.agents import gates, recovery
from loraloop.agents.manager import Manager, briefing, parse_decision
from loraloop.agents.policy import OpenAIPolicy
from loraloop.errors import ServiceUnavailable
from loraloop.kinds.registry import env_kind
from loraloop.store.records import Step
from tests.helpers import BASH

SHELL = env_kind("shell").envs.canonical_action


def step(i, command="ls", error=None, obs="o", nxt=None, progress=None, url=None):
    return Step(
        step_idx=i,
        raw_output=BASH.format(command),
        last_action_error=error,
        obs_hash=obs,
        observation=obs,
        next_observation=nxt if nxt is not None else obs + "'",
        progress_score=progress,
        url=url,
    )


def test_repeated_error_fires_on_the_same_error_twice_only():
    assert gates.repeated_error([step(0, error="e"), step(1, "pwd", error="e")])
    assert not gates.repeated_error([step(0, error="e"), step(1, "pwd", error="f")])
    assert not gates.repeated_error([step(0, error="e"), step(1, "pwd")])
    assert not gates.repeated_error([step(0, error="e")])


def test_error_streak_counts_consecutive_errors():
    steps = [step(0, error="a"), step(1, "x", error="b"), step(2, "y", error="c")]
    assert gates.error_streak(steps, 3) and not gates.error_streak(steps, 4)
    assert not gates.error_streak([*steps, step(3, "z")], 3)


def test_loop_is_the_same_action_in_the_same_state_or_three_in_a_row():
    same_state = [step(0, "ls", obs="A"), step(1, "pwd", obs="B"), step(2, "ls", obs="A")]
    assert gates.looping(same_state, SHELL)
    assert not gates.looping([step(0, "ls", obs="A"), step(1, "ls", obs="B")], SHELL)  # a new state: not a loop
    assert gates.looping([step(0, "ls", obs="A"), step(1, "ls", obs="B"), step(2, "ls", obs="C")], SHELL)
    # the same command written with another thought is the same action
    rewritten = Step(step_idx=3, raw_output="Think: again.\nAct: bash\n```bash\nls\n```", obs_hash="A")
    assert gates.looping([step(0, "ls", obs="A"), step(1, "pwd", obs="B"), rewritten], SHELL)


def test_trouble_orders_the_gates():
    assert gates.trouble([step(0, error="e"), step(1, "x", error="e")], SHELL, 2) == "repeated_error"
    assert gates.trouble([step(0, error="e"), step(1, "x", error="f")], SHELL, 2) == "error_streak"
    assert gates.trouble([step(0, error="e"), step(1, "x", error="f")], SHELL, 3) is None


def test_high_stakes_pages_and_destructive_commands():
    high_stakes, destructive = env_kind("web").agent.high_stakes, env_kind("shell").agent.destructive

    def at(url: str) -> str:
        return f"# Current page\nURL: {url}\n"

    assert high_stakes(at("http://h:1/shop/checkout")) and high_stakes(at("http://h/mail/compose"))
    assert high_stakes(at("http://h/mail/email/3/delete")) == "http://h/mail/email/3/delete"
    assert not high_stakes(at("http://h/shop/product/p2")) and not high_stakes("no page here")
    assert not high_stakes(at("http://h/shop/search?q=checkout"))  # the path, not the query
    assert env_kind("shell").agent.high_stakes(at("http://h:1/shop/checkout")) is None  # a kind without pages
    for command in (
        "rm -rf /tmp/x",
        "rm -r d",
        "rm --recursive d",
        "kill 12",
        "pkill -9 nginx",
        "chmod -R 777 /srv",
        "find . | xargs rm -fr",
    ):
        assert destructive(command), command
    for command in ("rm file.txt", "ls -R", "chmod 644 f", "echo skill", "grep -r kill_switch ."):
        assert not destructive(command), command
    assert not env_kind("web").agent.destructive("rm -rf /tmp/x")


def test_no_progress_reads_progress_scores_else_the_observation():
    flat = [step(i, f"cat f{i}", obs="same", nxt="same") for i in range(3)]
    assert recovery.trigger(flat, 3, SHELL) == "no_progress"
    assert not gates.no_progress(flat[:2], 3)
    moving = [step(0, obs="a", nxt="b"), step(1, "x", obs="b", nxt="c"), step(2, "y", obs="c", nxt="d")]
    assert not gates.no_progress(moving, 3)
    stuck = [step(i, str(i), obs=str(i), progress=0.2) for i in range(3)]
    rising = [step(i, str(i), obs="same", nxt="same", progress=0.1 * i) for i in range(3)]
    assert gates.no_progress(stuck, 3) and not gates.no_progress(rising, 3)


def test_recovery_triggers_and_actions_in_the_env_syntax():
    assert recovery.trigger([step(0, error="e"), step(1, "x", error="e")], 3, SHELL) == "repeated_error"
    looped = [step(0, "ls", obs="A"), step(1, "pwd", obs="B"), step(2, "ls", obs="A")]
    assert recovery.trigger(looped, 5, SHELL) == "loop"
    action = recovery.recovery_action(env_kind("shell"), "repeated_error", [step(0, error="no such file 'x'")])
    assert SHELL(action) == "bash: cd ~ && echo 'recovery (repeated_error); last error: no such file '\"'\"'x'\"'\"''"
    web = env_kind("web").envs.canonical_action
    on_first = [step(0, url="http://h/shop"), step(1, url="http://h/shop")]
    assert web(recovery.recovery_action(env_kind("web"), "loop", on_first)) == "web: goto('http://h/shop')"  # reload
    moved = [step(0, url="http://h/shop"), step(1, url="http://h/shop/search")]
    assert web(recovery.recovery_action(env_kind("web"), "no_progress", moved)) == "web: go_back()"
    assert (
        web(recovery.recovery_action(env_kind("web"), "repeated_error", moved)) == "web: goto('http://h/shop/search')"
    )
    assert recovery.recovery_action(env_kind("tau2"), "loop", moved) is None


def test_manager_reply_parsing():
    assert parse_decision("Reason: the file is there.\nThink: x\nAct: answer(3)") == (
        "the file is there.",
        "Think: x\nAct: answer(3)",
    )
    assert parse_decision("**Reason**: go back\nAction: go_back()") == ("go back", "Action: go_back()")
    assert parse_decision("Action: click('3')") == (None, "Action: click('3')")
    assert parse_decision("Reason: nothing to add") == ("nothing to add", None)
    messages = briefing(
        [{"role": "system", "content": "s"}, {"role": "user", "content": "Task: t"}],
        "high_stakes",
        proposal="Act: bash\n```bash\nrm -rf /\n```",
    )
    assert len(messages) == 2 and messages[1]["content"].startswith("Task: t\n\nYou are the manager")
    assert "rm -rf /" in messages[1]["content"] and "cannot be undone" in messages[1]["content"]


def test_a_manager_that_does_not_answer_is_down_for_the_episode():
    url = "http://127.0.0.1:9/v1"  # nothing listens on the discard port: a real refused connection
    manager = Manager(OpenAIPolicy(model="m", base_url=url, retries=0, timeout=5), "m", url)
    with pytest.raises(ServiceUnavailable, match=r"manager 'm' at http://127.0.0.1:9/v1 did not answer"):
        manager.decide([{"role": "user", "content": "Task: t"}], "warm_start")
    assert manager.down and "unreachable" in manager.down
    with pytest.raises(ServiceUnavailable, match="did not answer"):  # not asked again
        manager.decide([{"role": "user", "content": "Task: t"}], "loop")
