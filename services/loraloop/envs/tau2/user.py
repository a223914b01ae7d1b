"""The user simulator: an LLM behind any OpenAI-compatible URL, its calls recorded apart from the agent's.

By default it is the stack's own vLLM serving the base model (never an adapter being trained); AReaL's
names set another: `econfig.user_llm` and `econfig.user_llm_base_url` in a Task Server start's config (a URL
LORALOOP_TAU2_USER_LLM_ALLOWED_URLS allows), or LORALOOP_TAU2_USER_LLM and LORALOOP_TAU2_USER_LLM_BASE_URL for
every episode.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from loraloop.errors import ConfigError, EnvironmentFailure
from loraloop.input_rules import MODEL_NAME, same_url, url_list
from loraloop.replies import model_failure
from loraloop.tasks.tau2.package import tau2_registry

tau2_registry()  # before tau2's modules: offline litellm, quiet logs
from tau2.user.user_simulator import UserSimulator  # noqa: E402

ECONFIG_TYPES = {"user_llm": str, "user_llm_base_url": str, "solo_mode": bool}


def econfig(config: dict) -> dict[str, Any]:
    """AReaL's tau2 settings in a start config, `{"econfig": {...}}` or dotted `{"econfig.user_llm": ...}`; those
    loraloop uses are type-checked (a model name: at most 256 characters, no spaces or control characters), the rest
    (AReaL's training knobs) are ignored."""
    nested = config.get("econfig")
    if nested is None:
        nested = {}
    if not isinstance(nested, dict):
        raise ConfigError(f"config.econfig must be an object, got {type(nested).__name__}")
    found = {**nested, **{k.split(".", 1)[1]: v for k, v in config.items() if k.startswith("econfig.")}}
    for name, kind in ECONFIG_TYPES.items():
        if found.get(name) is not None and not isinstance(found[name], kind):
            raise ConfigError(f"config econfig.{name} must be a {kind.__name__}, got {str(found[name])[:100]!r}")
    if found.get("user_llm") is not None and not MODEL_NAME.fullmatch(found["user_llm"]):
        raise ConfigError(
            "config econfig.user_llm must be a served model name: 1 to 256 characters, no spaces or control characters"
        )
    return {name: found[name] for name in ECONFIG_TYPES if found.get(name) is not None}


@dataclass(frozen=True)
class UserLLM:
    """Where the user simulator's model is and how it is asked (AReaL's econfig.user_llm, econfig.user_llm_base_url)."""

    model: str
    base_url: str
    api_key: str = "EMPTY"
    max_tokens: int = 192
    timeout_s: float = 120.0
    retries: int = 4

    @classmethod
    def resolve(cls, settings, config: dict) -> UserLLM:
        """The start config's econfig, else LORALOOP_TAU2_USER_LLM*, else the stack's vLLM and base model.

        Outbound URLs are the operator's: a client's econfig.user_llm_base_url must be the configured one or one of
        LORALOOP_TAU2_USER_LLM_ALLOWED_URLS (ConfigError naming the field otherwise), and the operator's key goes only
        to the configured URL, so a client can neither point the server at its own listener nor collect the key."""
        found = econfig(config)
        configured = settings.tau2_user_llm_base_url or settings.vllm_url
        asked = found.get("user_llm_base_url")
        if asked is not None and not any(
            same_url(asked, url) for url in [configured, *url_list(settings.tau2_user_llm_allowed_urls)]
        ):
            raise ConfigError(
                f"config econfig.user_llm_base_url {asked[:200]!r} is not a user simulator this server "
                f"allows: leave it out (the server's own) or name one of "
                f"LORALOOP_TAU2_USER_LLM_ALLOWED_URLS"
            )
        base_url = asked or configured
        api_key = settings.tau2_user_llm_api_key or settings.vllm_api_key if same_url(base_url, configured) else "EMPTY"
        return cls(
            model=found.get("user_llm") or settings.tau2_user_llm or settings.base_model_name,
            base_url=base_url,
            api_key=api_key,
            max_tokens=settings.max_tokens,
            timeout_s=settings.request_timeout_s,
            retries=settings.model_retries,
        )

    def litellm(self) -> tuple[str, dict]:
        """tau2's `llm` and `llm_args` for this server: litellm's OpenAI-compatible route to base_url, greedy."""
        return f"openai/{self.model}", {
            "api_base": self.base_url,
            "api_key": self.api_key,
            "temperature": 0.0,
            "max_tokens": self.max_tokens,
            "timeout": self.timeout_s,
            "num_retries": self.retries,
        }


class RecordedUser(UserSimulator):
    """tau2's user simulator on a UserLLM, each call appended to `turns` as a `user_turn` event (model, URL,
    latency, usage, what it said); a failed call raises loraloop's error for it (the server is named)."""

    def __init__(self, llm: UserLLM, turns: list[dict], **kwargs) -> None:
        model, args = llm.litellm()
        super().__init__(llm=model, llm_args=args, **kwargs)
        self.server = llm
        self.turns = turns

    def generate_next_message(self, message, state):
        """tau2's next user message, timed and recorded."""
        started = time.perf_counter()
        try:
            reply, state = super().generate_next_message(message, state)
        except Exception as exc:
            server = self.server
            failure = model_failure(
                exc, "tau2 user simulator", server.base_url, server.model, server.timeout_s, server.retries
            )
            raise failure or EnvironmentFailure(f"tau2 user simulator failed: {type(exc).__name__}: {exc}") from exc
        self.turns.append(
            {
                "type": "user_turn",
                "content": reply.content,
                "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in reply.tool_calls or []] or None,
                "model": self.server.model,
                "url": self.server.base_url,
                "usage": reply.usage,
                "latency_ms": round((time.perf_counter() - started) * 1000, 1),
            }
        )
        return reply, state
