"""What a policy answers, and the text of a model's reply: the leaf every layer may use.

`Reply` and `Policy` are the contract between whatever acts (a model through agents/, an environment's scripted
teacher in envs/, a user simulator) and whoever records it (rollout/, the gateway); this module depends on nothing
of loraloop's but the record models and the named errors, so environments use it without importing agents/.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Protocol

from loraloop.errors import LoraloopError, ModelRequestError, ModelTimeout, ServiceUnavailable
from loraloop.store.records import Adapter


@dataclass
class Reply:
    """A policy's turn: the text, which model (or script) wrote it, and how long it took.

    A model's reply also carries what the RL loop trains on, as the server returned it: the prompt's
    and the completion's token ids and the completion's sampling logprobs (None where the server does
    not return them, and for scripted policies), the sampling parameters sent and the adapter version.
    """

    text: str
    source: str
    model: str
    latency_ms: float
    completion_tokens: int = 0
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    sampling: dict[str, Any] | None = None
    adapter: Adapter | None = None

    def unsampled(self) -> Reply:
        """This reply without what was sampled (token ids, logprobs, sampling, adapter): a reply whose tokens are not
        the policy's to train on (the HALO manager's, which chose an action the worker did not write)."""
        return replace(
            self, prompt_token_ids=None, completion_token_ids=None, logprobs=None, sampling=None, adapter=None
        )


class Policy(Protocol):
    """Anything that answers a list of chat messages."""

    def act(self, messages: list[dict[str, str]]) -> Reply: ...


def model_failure(
    exc: Exception, who: str, base_url: str, model: str, timeout: float, retries: int
) -> LoraloopError | None:
    """The loraloop error for a request to an OpenAI-compatible server that failed (litellm's errors are the OpenAI
    client's), or None for another error: too slow is ModelTimeout, down, failing or not serving the model is
    ServiceUnavailable, a refused request ModelRequestError; each names `who` and the URL, so a job counts them
    apart and a reader knows which server to look at. A connection error anywhere in the chain of causes wins."""
    import openai

    cause: BaseException | None = exc  # litellm reports a refused connection as an HTTP 500 raised from it
    while cause is not None and not isinstance(cause, openai.APIConnectionError):
        cause = cause.__cause__ or cause.__context__
    exc = cause or exc
    if isinstance(exc, openai.APITimeoutError):  # before its parent class, APIConnectionError
        return ModelTimeout(
            f"{who} at {base_url} timed out: no reply within {timeout:g} s "
            f"(LORALOOP_REQUEST_TIMEOUT_S), {retries + 1} request" + "s" * (retries > 0)
        )
    if isinstance(exc, openai.APIConnectionError):
        return ServiceUnavailable(f"{who} unreachable at {base_url}")
    if isinstance(exc, openai.NotFoundError):
        return ServiceUnavailable(f"model {model!r} is not served at {base_url} ({who})")
    if isinstance(exc, openai.BadRequestError):
        return ModelRequestError(f"{who} at {base_url} refused the request: {str(exc.message)[:300]}")
    if isinstance(exc, openai.APIStatusError) and exc.status_code >= 500:
        return ServiceUnavailable(f"{who} at {base_url} kept failing: HTTP {exc.status_code}")
    return None


def action_text(message) -> str:
    """The action a chat message carries: its first tool call as text, else its content."""
    if getattr(message, "tool_calls", None):
        call = message.tool_calls[0].function
        return tool_call_text(call.name, call.arguments)
    return message.content or ""


def tool_call_text(name: str, arguments: str | dict) -> str:
    """One tool call as the action text environments take: `{"name": …, "arguments": {…}}`.

    Tool calls travel as text so that the Task Server and the store see one action string per
    step whichever protocol the agent speaks; arguments that are not JSON are kept for the
    environment's parser to report.
    """
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except json.JSONDecodeError:
            pass  # kept as given: the parser reports it
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
