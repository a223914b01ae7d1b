"""The contract every loraloop environment keeps, close to Gymnasium's.

An environment takes the agent's reply as text and answers in text:

- `reset(seed=None, options=None)` starts an episode and returns `(observation, info)`; `info`
  carries what the task computed at reset (`expected`), so a wrong answer can be diagnosed later;
- `step(action)` returns a `StepResult`, which unpacks as Gymnasium's five-tuple
  `(observation, reward, terminated, truncated, info)`: `terminated` when the task ended (an
  answer, a final message), `truncated` when the round limit cut it;
- `close()` releases what the episode held (container, browser context).

This is the bottom of the environments: the contract and nothing else. What a whole kind of environment
brings (its task format, its env factory, its worker hooks, what HALO asks of it) is `kinds/spec.py`'s
`EnvKind`, and the kinds are looked up in `kinds/registry.py`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

Message = dict[str, str]
# How a kind lays out its chat: (instructions, examples, first observation, (reply, observation) turns, budget).
PromptBuilder = Callable[[str, list[Message], str, list[tuple[str, str]], int], list[Message]]


class StepResult(NamedTuple):
    """What one step returns; unpacks as Gymnasium's (observation, reward, terminated, truncated, info).

    The observation is None when the episode terminated (nothing more to see); a truncated
    episode (round limit) still returns the last observation.
    """

    observation: str | None
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any]

    @property
    def done(self) -> bool:
        """True when the episode is over, by its own end or by the round limit."""
        return self.terminated or self.truncated


class Env(Protocol):
    """A text environment: the prompt parts the policy needs, reset/step/close."""

    instructions: str  # the system prompt
    examples: list[Message]  # one-shot turns shown before the task
    prompt_style: str  # how kinds/prompts lays out the chat (`chat`, `web`)
    stop: list[str] | None  # stop strings for the model (it must not write the env's part)
    max_rounds: int

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, dict[str, Any]]: ...

    def step(self, action: str) -> StepResult: ...

    def close(self) -> None: ...


class SharedEnv(Env, Protocol):
    """An env another process can take over (a kind with `attach`: the shell's container): `handle()` is what
    `attach` needs to find it again, `detach()` lets go of it without ending it."""

    def handle(self) -> dict: ...

    def detach(self) -> None: ...


@dataclass(frozen=True)
class EnvOptions:
    """How a driver wants an episode run: round limit, protocol, screenshots, its id, and the kind's own settings
    (`config`: what a Task Server client sent with the start, e.g. tau2's `econfig`)."""

    max_steps: int | None = None  # None: the kind's own round limit
    protocol: str = "text"
    screenshots: bool = False
    episode_id: str | None = None
    shared: bool = False  # the episode may go on in another process: the env saves what that needs
    config: dict = field(default_factory=dict, hash=False)
