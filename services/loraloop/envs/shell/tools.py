"""AgentBench's tool-call protocol for the OS task: bash_action, answer_action, finish_action.

The same environment as the text protocol; only the prompt and the parser differ. A tool call
travels as text, `{"name": "bash_action", "arguments": {"script": "ls"}}` (arguments may also be
a JSON string, as OpenAI's tool_calls carry them), so the Task Server and the trajectory store
see one action string per step whichever protocol the agent speaks.
"""

from __future__ import annotations

import json

from loraloop.envs.shell.protocol import OSAction

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash_action",
            "description": "Run a bash script in the Linux shell and see its output.",
            "parameters": {"type": "object", "properties": {"script": {"type": "string"}}, "required": ["script"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "answer_action",
            "description": "Give the final answer to the task.",
            "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "finish_action",
            "description": "Say the task (a change to the system) is done.",
            "parameters": {"type": "object", "properties": {"thought": {"type": "string"}}, "required": []},
        },
    },
]
ARGUMENT = {"bash_action": "script", "answer_action": "answer", "finish_action": None}
KIND = {"bash_action": "bash", "answer_action": "answer", "finish_action": "finish"}

TOOL_INSTRUCTIONS = """You are an assistant that solves tasks by running commands in a Linux bash shell.
Call exactly one tool per turn: bash_action(script) runs a command and shows its output,
answer_action(answer) gives the final answer alone, finish_action(thought) says a requested
change to the system is done."""

TOOL_ONE_SHOT = [
    {"role": "user", "content": "Task: How many files are in /etc/skel? Answer with the number only."},
    {
        "role": "assistant",
        "content": json.dumps({"name": "bash_action", "arguments": {"script": "ls -A /etc/skel | wc -l"}}),
    },
    {"role": "user", "content": "The output of the OS:\n\n3"},
    {"role": "assistant", "content": json.dumps({"name": "answer_action", "arguments": {"answer": "3"}})},
]


def parse_tool_call(text: str) -> OSAction | None:
    """The action in a tool-call text, an invalid action naming what is wrong, or None for plain text."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        call = json.loads(stripped)
    except json.JSONDecodeError:
        return None
    if isinstance(call, list):
        if len(call) != 1:
            return OSAction("invalid", error=f"call exactly one tool per turn, got {len(call)}")
        call = call[0]
    if not isinstance(call, dict) or "name" not in call:
        return None
    name, arguments = call["name"], call.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            return OSAction("invalid", error=f"{name}: arguments are not JSON ({exc.msg})")
    if name not in KIND:
        return OSAction("invalid", error=f"unknown tool {name!r} (tools: {', '.join(KIND)})")
    if not isinstance(arguments, dict):
        return OSAction("invalid", error=f"{name}: arguments must be an object")
    field = ARGUMENT[name]
    if field is None:
        return OSAction("finish", thought=str(arguments.get("thought", "")))
    value = arguments.get(field)
    if not isinstance(value, str) or (name == "bash_action" and not value.strip()):
        return OSAction("invalid", error=f"{name}: argument {field!r} must be a non-empty string")
    return OSAction(KIND[name], value)
