"""AgentBench text protocol: parsing, observation strings and truncation."""

from loraloop.envs.shell.protocol import EMPTY_OUTPUT, TRUNCATION_NOTE, format_output, parse_action
from loraloop.kinds.prompts import build_messages


def test_bash_action_takes_code_block():
    action = parse_action("Think: list.\n\nAct: bash\n\n```bash\nls /etc | wc -l\n```")
    assert (action.kind, action.content, action.thought) == ("bash", "ls /etc | wc -l", "list.")


def test_last_act_line_wins_and_answer_takes_outer_parentheses():
    action = parse_action("Act: bash\n```bash\nls\n```\nAct: answer(f(x) = (1))")
    assert (action.kind, action.content) == ("answer", "f(x) = (1)")


def test_finish_and_invalid():
    assert parse_action("Think: done\nAct: finish").kind == "finish"
    bad = parse_action("I think the answer is 3")
    assert bad.kind == "invalid" and "no 'Act:" in bad.error
    no_block = parse_action("Act: bash\nls")
    assert no_block.kind == "invalid" and "code block" in no_block.error


def test_answer_without_parentheses_falls_back_to_earlier_act():
    action = parse_action("Act: finish\nAct: answer 3")
    assert action.kind == "finish"


def test_observation_strings_and_truncation():
    assert format_output("  \n") == EMPTY_OUTPUT
    assert format_output("42\n") == "The output of the OS:\n\n42\n"
    long = "x" * 801
    out = format_output(long)
    assert out == "The output of the OS:\n\n" + "x" * 780 + TRUNCATION_NOTE
    assert format_output("y" * 800) == "The output of the OS:\n\n" + "y" * 800


def test_history_drops_oldest_turns_but_keeps_task():
    turns = [(f"reply {i}", "o" * 100) for i in range(10)]
    messages = build_messages("sys", [], "Task: t", turns, char_budget=400)
    assert messages[0]["content"] == "sys" and messages[1]["content"] == "Task: t"
    assert messages[-2]["content"] == "reply 9"
    assert len(messages) < 2 + 2 * len(turns)
    assert all(m["role"] in ("system", "user", "assistant") for m in messages)


def test_tool_call_protocol_parses_agentbench_tools():
    from loraloop.agents.policy import tool_call_text
    from loraloop.envs.shell.tools import parse_tool_call

    assert parse_tool_call("Think: x\nAct: finish") is None  # plain text goes to the text protocol
    bash = parse_tool_call(tool_call_text("bash_action", '{"script": "ls /root"}'))
    assert (bash.kind, bash.content) == ("bash", "ls /root")
    answer = parse_tool_call('[{"name": "answer_action", "arguments": {"answer": "42"}}]')
    assert (answer.kind, answer.content) == ("answer", "42")
    assert parse_tool_call('{"name": "finish_action", "arguments": "{}"}').kind == "finish"
    assert "unknown tool 'rm_action'" in parse_tool_call('{"name": "rm_action", "arguments": {}}').error
    assert "argument 'script' must be" in parse_tool_call('{"name": "bash_action", "arguments": {"script": ""}}').error
    assert "not JSON" in parse_tool_call('{"name": "bash_action", "arguments": "{oops"}').error
    assert "exactly one tool" in parse_tool_call("[]").error


def test_openai_tool_calls_become_the_action_text():
    from openai.types.chat import ChatCompletionMessage

    from loraloop.agents.policy import action_text

    message = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash_action", "arguments": '{"script": "pwd"}'}}
            ],
        }
    )
    assert action_text(message) == '{"name": "bash_action", "arguments": {"script": "pwd"}}'
    assert action_text(ChatCompletionMessage(role="assistant", content="Act: finish")) == "Act: finish"
