"""Policies: turn chat messages into the agent's next reply."""

from __future__ import annotations

import threading
import time
from functools import cache
from typing import TYPE_CHECKING, Any, cast

from loraloop.replies import Policy, Reply, action_text, model_failure, tool_call_text
from loraloop.store.records import Adapter

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam, ChatCompletionToolParam

__all__ = ["OpenAIPolicy", "Policy", "Reply", "action_text", "model_failure", "request_slots", "tool_call_text"]


@cache
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

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key: str = "EMPTY",
        temperature: float = 0.0,
        max_tokens: int = 192,
        seed: int | None = None,
        timeout: float = 120.0,
        retries: int = 4,
        max_in_flight: int = 32,
        tools: list[dict] | None = None,
        stop: list[str] | None = None,
        adapter: Adapter | None = None,
    ) -> None:
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
                sampling = self.sampling  # what is sent is what the step records
                response = self.client.chat.completions.create(
                    model=self.model,
                    messages=cast("list[ChatCompletionMessageParam]", messages),  # chat dicts, as the API takes
                    temperature=sampling["temperature"],
                    max_tokens=sampling["max_tokens"],
                    seed=sampling["seed"],
                    stop=sampling.get("stop", openai.NOT_GIVEN),
                    tools=cast("list[ChatCompletionToolParam]", self.tools) if self.tools else openai.omit,
                    logprobs=True,
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
        return Reply(
            action_text(choice.message),
            "worker",
            response.model,
            (time.perf_counter() - started) * 1000,
            usage,
            prompt_token_ids=getattr(response, "prompt_token_ids", None),
            completion_token_ids=getattr(choice, "token_ids", None),
            logprobs=None if content is None else [token.logprob for token in content],
            sampling=self.sampling,
            adapter=self.adapter,
        )

    @property
    def sampling(self) -> dict[str, Any]:
        """The sampling parameters every request sends (the stop strings only with the text protocol)."""
        sent = {"temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed}
        return {**sent, "stop": self.stop} if self.stop and not self.tools else sent
