"""Policies: turn chat messages into the agent's next reply."""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
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

    def sample(self) -> dict[str, Any]:
        """The fields a Step record keeps of the sampling (EpisodeSession.act's `**sample`)."""
        return {"prompt_token_ids": self.prompt_token_ids, "completion_token_ids": self.completion_token_ids,
                "logprobs": self.logprobs, "sampling": self.sampling, "adapter": self.adapter}


class Policy(Protocol):
    """Anything that answers a list of chat messages."""

    def act(self, messages: list[dict[str, str]]) -> Reply: ...


@lru_cache(maxsize=None)
def request_slots(limit: int) -> threading.BoundedSemaphore:
    """The process-wide cap on model requests in flight (many episodes share one server)."""
    return threading.BoundedSemaphore(limit)


class OpenAIPolicy:
    """A worker policy served by any OpenAI-compatible endpoint (vLLM: base model or adapter name).

    Requests are retried with exponential backoff on connection errors, 408, 429 and 5xx
    (the OpenAI client's own policy, `retries` times), and at most `max_in_flight` run at once
    per process so that a worker's episodes batch on the server without swamping it.

    Every request asks for the completion's logprobs and, from vLLM, the prompt and completion
    token ids (`return_token_ids`), so a reply carries exactly what was sampled; `adapter` is the
    adapter version `model` serves (None for a base model), copied into every reply.
    """

    def __init__(self, *, model: str, base_url: str, api_key: str = "EMPTY", temperature: float = 0.0,
                 max_tokens: int = 192, seed: int | None = None, timeout: float = 120.0, retries: int = 4,
                 max_in_flight: int = 32, tools: list[dict] | None = None,
                 stop: list[str] | None = None, adapter: Adapter | None = None) -> None:
        from openai import OpenAI

        self.model = model
        self.adapter = adapter
        self.base_url = base_url
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.slots = request_slots(max_in_flight)
        self.tools = tools  # tool-call protocol: the reply's first tool call becomes the action text
        self.stop = stop
        self.timeout, self.retries = timeout, retries
        self.client = OpenAI(base_url=base_url, api_key=api_key, timeout=timeout, max_retries=retries)

    def act(self, messages: list[dict[str, str]]) -> Reply:
        """Ask the model for the next turn; a server down or failing becomes ServiceUnavailable, one too slow
        ModelTimeout, so the job counts them apart."""
        import openai

        started = time.perf_counter()
        try:
            with self.slots:
                extra = {"tools": self.tools} if self.tools else {}
                response = self.client.chat.completions.create(
                    model=self.model, messages=messages, **self.sampling, **extra, logprobs=True,
                    extra_body={"return_token_ids": True},
                )
        except openai.OpenAIError as exc:
            failure = model_failure(exc, "model server", self.base_url, self.model, self.timeout, self.retries)
            if failure is None:
                raise
            raise failure from exc
        usage = response.usage.completion_tokens if response.usage else 0
        choice = response.choices[0]
        content = choice.logprobs.content if choice.logprobs else None
        return Reply(action_text(choice.message), "worker", response.model, (time.perf_counter() - started) * 1000,
                     usage, prompt_token_ids=getattr(response, "prompt_token_ids", None),
                     completion_token_ids=getattr(choice, "token_ids", None),
                     logprobs=None if content is None else [token.logprob for token in content],
                     sampling=self.sampling, adapter=self.adapter)

    @property
    def sampling(self) -> dict[str, Any]:
        """The sampling parameters every request sends (the stop strings only with the text protocol)."""
        sent = {"temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed}
        return {**sent, "stop": self.stop} if self.stop and not self.tools else sent


def model_failure(exc: Exception, who: str, base_url: str, model: str, timeout: float,
                  retries: int) -> LoraloopError | None:
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
        return ModelTimeout(f"{who} at {base_url} timed out: no reply within {timeout:g} s "
                            f"(LORALOOP_REQUEST_TIMEOUT_S), {retries + 1} request" + "s" * (retries > 0))
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
