"""How the agent speaks in tau2 episodes: its system prompt, and how a reply becomes one tau2 action.

Each turn is one tool call or one message to the user. A tool call travels as text,
`{"name": "create_task", "arguments": {...}}` (what OpenAIPolicy makes of a native tool call), or in
tau2's functional form `create_task(user_id="u1")`; any other reply is a message to the user. With the
`text` protocol, for models whose chat template ignores `tools` (SmolLM2's), the system prompt lists
the tool schemas; with `tools` the server gets them natively. A reply that tries a tool call and fails
(bad JSON, an unknown tool, arguments that are no object) is not sent: it becomes an error observation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass, field

from loraloop.tasks.tau2.package import tau2_registry

STOP_TOOL = "done"  # tau2's gym agent ends the episode with this tool
_WRAPPED = re.compile(r"^(?:```(?:json)?|<tool_call>)\s*(.*?)\s*(?:```|</tool_call>)$", re.S)

TEXT_FORMAT = """
<tools>
{schemas}
</tools>
To call a tool, reply with only a JSON object: {{"name": "<tool name>", "arguments": {{<arguments>}}}}.
Any other reply is sent to the user as a message. When the task is done, call the tool `{stop}`."""


def system_prompt(policy: str, schemas: list[dict], protocol: str, solo: bool) -> str:
    """tau2's own agent instructions (solo: work from the ticket, tool calls only) and the domain policy; with the
    `text` protocol, the tool schemas (one JSON object a line) and how to call them."""
    from tau2.agent.llm_agent import AGENT_INSTRUCTION, AGENT_SOLO_INSTRUCTION, SYSTEM_PROMPT

    instruction = AGENT_SOLO_INSTRUCTION.format(stop_function_name=STOP_TOOL) if solo else AGENT_INSTRUCTION
    prompt = SYSTEM_PROMPT.format(agent_instruction=instruction, domain_policy=policy.strip())
    if protocol != "text":
        return prompt
    lines = "\n".join(json.dumps(schema["function"], separators=(",", ":")) for schema in schemas)
    return prompt + TEXT_FORMAT.format(schemas=lines, stop=STOP_TOOL)


@dataclass(frozen=True)
class AgentTurn:
    """One parsed reply: a tool call (`tool`), a message to the user (`message`) or a failed tool call (`invalid`,
    `text` says what is wrong)."""

    kind: str
    text: str = ""
    name: str = ""
    arguments: dict = field(default_factory=dict)

    def action(self) -> str:
        """The action string tau2's gym takes: the call as JSON, or the message."""
        return json.dumps({"name": self.name, "arguments": self.arguments}) if self.kind == "tool" else self.text

    def canonical(self) -> str:
        """The action as exports compare it: `tau2: name({...})` or `say: text`."""
        if self.kind == "tool":
            return f"tau2: {self.name}({json.dumps(self.arguments, sort_keys=True, ensure_ascii=False)})"
        return f"say: {' '.join(self.text.split())}"


def _invalid(error: str) -> AgentTurn:
    return AgentTurn("invalid", error)


def _call(name: str, arguments, tools: Collection[str] | None) -> AgentTurn:
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError as exc:
            return _invalid(f"malformed tool call: {name}: arguments are not JSON ({exc.msg})")
    if not isinstance(arguments, dict):
        return _invalid(f"malformed tool call: {name}: 'arguments' must be an object")
    if tools is not None and name not in tools:
        return _invalid(f"unknown tool {name!r} (tools: {', '.join(sorted(tools))})")
    return AgentTurn("tool", name=name, arguments=arguments)


def parse_turn(text: str, tools: Collection[str] | None = None) -> AgentTurn:
    """The action a reply holds; `tools` (the names the episode has) makes a call to any other name invalid."""
    tau2_registry()  # before tau2's modules: offline litellm, quiet logs
    from tau2.utils.tools import is_functional_tool_call, parse_functional_tool_call

    stripped = text.strip()
    if not stripped:
        return _invalid("the reply is empty: call a tool or write a message to the user")
    wrapped = _WRAPPED.match(stripped)
    body = wrapped.group(1) if wrapped else stripped
    if body.startswith(("{", "[")):
        try:
            call = json.loads(body)
        except json.JSONDecodeError as exc:
            return _invalid(f"malformed tool call: not valid JSON ({exc.msg}, line {exc.lineno} column {exc.colno})")
        if isinstance(call, list):
            if len(call) != 1:
                return _invalid(f"call exactly one tool per turn, got {len(call)}")
            call = call[0]
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            return _invalid('malformed tool call: write {"name": "<tool name>", "arguments": {...}}')
        return _call(call["name"], call.get("arguments", {}), tools)
    if is_functional_tool_call(body):
        try:
            call = parse_functional_tool_call(body)
        except Exception as exc:  # tau2 raises whatever its parser met
            return _invalid(f"malformed tool call: {exc}")
        return _call(call.name, call.arguments, tools)
    return AgentTurn("message", stripped)
