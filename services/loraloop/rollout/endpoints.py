"""Where a model is served: an experiment's own OpenAI-compatible URL and key, or the stack's vLLM."""

from __future__ import annotations

import os

from loraloop.errors import ConfigError
from loraloop.settings import Settings


def server_url(url: str | None, settings: Settings) -> str:
    """An experiment's own server, else the stack's vLLM (LORALOOP_VLLM_URL): where its requests go, and what
    its episodes record as the model's or the manager's URL."""
    return url or settings.vllm_url


def endpoint(url: str | None, api_key_env: str | None, settings: Settings) -> tuple[str, str]:
    """The (base URL, API key) of a model server: `url` or the stack's vLLM (LORALOOP_VLLM_URL), and the key
    read from the environment variable `api_key_env` names (else LORALOOP_VLLM_API_KEY).

    The key is read here, in the process that sends requests, so it is never in a job, a record or a log;
    a variable that is not set fails naming the variable, not its value.
    """
    if api_key_env:
        key = os.environ.get(api_key_env, "")
        if not key:
            raise ConfigError(
                f"{api_key_env} is not set: the experiment's server at {server_url(url, settings)} "
                f"needs its API key in that environment variable"
            )
    else:
        key = settings.vllm_api_key
    return server_url(url, settings), key
