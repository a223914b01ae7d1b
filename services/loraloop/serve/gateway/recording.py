"""What the gateway keeps of one chat completion, from vLLM's reply whole or streamed.

Every request goes to vLLM asking also for the completion's logprobs and the prompt's and
completion's token ids (`return_token_ids`, as agents/policy.OpenAIPolicy asks), so the recorded
step holds exactly what was sampled. The client gets vLLM's reply as it would have without the
gateway: the fields it did not ask for are taken out again, everything else (content, tool calls,
finish reason, usage) passes through unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from loraloop.agents.policy import tool_call_text

# What the gateway adds to every request, and where vLLM answers it (top level, or in each choice).
ASKED = {"logprobs": True, "return_token_ids": True}


def upstream_body(body: dict[str, Any]) -> dict[str, Any]:
    """The body sent to vLLM: the client's, asking also for logprobs and token ids."""
    return {**body, **ASKED}


def for_client(payload: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """vLLM's reply (or one streamed chunk) less what the gateway asked for and the client did not."""
    if not body.get("return_token_ids"):
        payload.pop("prompt_token_ids", None)
        for choice in payload.get("choices") or ():
            choice.pop("token_ids", None)
    if not body.get("logprobs"):
        for choice in payload.get("choices") or ():
            choice["logprobs"] = None
    return payload


@dataclass
class Completion:
    """One sampled completion as the client received it, with what the RL loop trains on."""

    id: str
    model: str
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)

    @property
    def action(self) -> str:
        """The step's text: the first tool call as loraloop writes tool calls (agents/policy), else the content."""
        if self.tool_calls:
            call = self.tool_calls[0].get("function") or {}
            return tool_call_text(call.get("name") or "", call.get("arguments") or "")
        return self.content

    def add_choice(self, choice: dict[str, Any]) -> None:
        """Take in one choice of a reply, or one streamed chunk's (its delta: text, tool-call pieces, tokens)."""
        message = choice.get("message") or choice.get("delta") or {}
        self.content += message.get("content") or ""
        for call in message.get("tool_calls") or ():
            self._add_call(call, streamed="delta" in choice)
        self.completion_token_ids += choice.get("token_ids") or []
        self.logprobs += [token["logprob"] for token in ((choice.get("logprobs") or {}).get("content") or ())]
        self.finish_reason = choice.get("finish_reason") or self.finish_reason

    def _add_call(self, call: dict[str, Any], streamed: bool) -> None:
        """A tool call whole, or a streamed piece of one (its name and arguments arrive in fragments by index)."""
        index = call.get("index", len(self.tool_calls)) if streamed else len(self.tool_calls)
        while len(self.tool_calls) <= index:
            self.tool_calls.append({"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
        whole = self.tool_calls[index]
        whole["id"] = call.get("id") or whole["id"]
        function = call.get("function") or {}
        whole["function"]["name"] += function.get("name") or ""
        whole["function"]["arguments"] += function.get("arguments") or ""


def completion_of(payload: dict[str, Any]) -> Completion:
    """The completion a whole (non-streamed) vLLM reply holds: its first choice."""
    completion = Completion(
        id=payload.get("id", ""), model=payload.get("model", ""), prompt_token_ids=payload.get("prompt_token_ids")
    )
    completion.add_choice(payload["choices"][0])
    return completion


class StreamedCompletion:
    """A completion put together from vLLM's stream, chunk by chunk, as the client receives it."""

    def __init__(self) -> None:
        self.completion: Completion | None = None

    def add(self, chunk: dict[str, Any]) -> None:
        """Take in one chunk (the first carries the prompt's token ids; a usage chunk has no choice)."""
        if self.completion is None:
            self.completion = Completion(id=chunk.get("id", ""), model=chunk.get("model", ""))
        if chunk.get("prompt_token_ids") is not None:
            self.completion.prompt_token_ids = chunk["prompt_token_ids"]
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) == 0:
                self.completion.add_choice(choice)
