"""A worker policy over transformers in this process: for hosts without a model server, and for debugging.

It is slow (no batching, no paged attention: one reply at a time on the CPU), but it sees the same prompts
(kinds/prompts.py, through EpisodeSession.prompt) and returns the same Reply fields as OpenAIPolicy: the
prompt's and the completion's token ids, and each sampled token's logprob from generate's scores.
"""

from __future__ import annotations

import threading
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from loraloop.agents.policy import Reply
from loraloop.errors import ConfigError


@lru_cache(maxsize=2)
def load(model: str) -> tuple[Any, Any, threading.Lock]:
    """The tokenizer and model for a folder or hub name, loaded once per process, with the lock that keeps
    episodes of this process from generating on it at the same time."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(model)
        weights = AutoModelForCausalLM.from_pretrained(model)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"local worker: cannot load the model {model!r} ({str(exc).splitlines()[0][:200]})") from exc
    weights.eval()
    return tokenizer, weights, threading.Lock()


class LocalPolicy:
    """A worker answering with `model` (a folder or hub name) through transformers' generate."""

    def __init__(
        self,
        model: str,
        *,
        temperature: float = 0.0,
        max_tokens: int = 192,
        seed: int | None = None,
        stop: list[str] | None = None,
    ) -> None:
        self.model, self.temperature, self.max_tokens, self.seed, self.stop = model, temperature, max_tokens, seed, stop
        self.name = Path(model).name

    @property
    def sampling(self) -> dict[str, Any]:
        """The sampling parameters every reply uses (the same keys OpenAIPolicy records)."""
        sent = {"temperature": self.temperature, "max_tokens": self.max_tokens, "seed": self.seed}
        return {**sent, "stop": self.stop} if self.stop else sent

    def act(self, messages: list[dict[str, str]]) -> Reply:
        """Generate the next turn; the text stops before the first stop string, as a server's does."""
        import torch

        tokenizer, weights, lock = load(self.model)
        started = time.perf_counter()
        prompt = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        sampled = self.temperature > 0
        options = {"do_sample": True, "temperature": self.temperature} if sampled else {"do_sample": False}
        with lock, torch.no_grad():
            if self.seed is not None:
                torch.manual_seed(self.seed)
            out = weights.generate(
                **prompt,
                max_new_tokens=self.max_tokens,
                output_scores=True,
                return_dict_in_generate=True,
                stop_strings=self.stop or None,
                tokenizer=tokenizer,
                pad_token_id=tokenizer.eos_token_id,
                **options,
            )
            scores = weights.compute_transition_scores(out.sequences, out.scores, normalize_logits=True)[0]
        width = prompt["input_ids"].shape[1]
        completion = out.sequences[0, width:].tolist()
        text = tokenizer.decode(completion, skip_special_tokens=True)
        for stop in self.stop or []:
            text = text.split(stop, 1)[0]
        return Reply(
            text,
            "worker",
            self.name,
            (time.perf_counter() - started) * 1000,
            len(completion),
            prompt_token_ids=prompt["input_ids"][0].tolist(),
            completion_token_ids=completion,
            logprobs=[round(float(x), 6) for x in scores[: len(completion)]],
            sampling=self.sampling,
        )
