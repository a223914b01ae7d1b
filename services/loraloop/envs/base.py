"""The contract every loraloop environment keeps, close to Gymnasium's.

An environment takes the agent's reply as text and answers in text:

- `reset(seed=None, options=None)` starts an episode and returns `(observation, info)`; `info` is a
  `ResetInfo`: what the task computed at reset (`expected`), so a wrong answer can be diagnosed later;
- `step(action)` returns a `StepResult`, which unpacks as Gymnasium's five-tuple
  `(observation, reward, terminated, truncated, info)`: `terminated` when the task ended (an
  answer, a final message), `truncated` when the round limit cut it; `info` is a `StepInfo`.

Gymnasium's `info` is a dict read by key; here it is typed, because every driver reads the same few keys
(the action's kind, its error, the outcome) and a misspelt key read with `.get` is a silent None. What only one
kind knows (a web task's evals, BrowserGym's task_info) goes in `details`, a dict as Gymnasium's.
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


@dataclass
class ResetInfo:
    """What `reset` says besides the first observation: the task's expected answer where it computes one (the shell's),
    the page's URL (the web kinds'), the seed played where the env picks it, the events of the setup (tau2's user,
    BrowserGym's task), and the kind's own `details`."""

    expected: str | None = None
    url: str | None = None
    seed: int | None = None
    events: list[dict] | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class StepInfo:
    """What one step says besides its observation and reward.

    Every step: its `turn` (1-based) and the parsed action's kind (`bash`, `click`, `answer`, `invalid`…), with
    the canonical `action` text where it parsed, the `error` it met (None when none), the shell's `exit_code`, the
    page's `url`, the events it caused (tau2's tool results). The last step (terminated or truncated) adds the
    outcome: `status` (`completed`, `round_limit`), `success`, the agent's `answer`, `num_turns` (set by `end`).
    """

    turn: int
    action_kind: str
    action: str | None = None
    error: str | None = None
    exit_code: int | None = None
    url: str | None = None
    events: list[dict] | None = None
    status: str | None = None
    success: bool | None = None
    answer: str | None = None
    num_turns: int | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def end(
        self, status: str, success: bool, answer: str | None = None, details: dict[str, Any] | None = None
    ) -> StepInfo:
        """Mark the episode's end on this step: its status, success and answer (`num_turns` is the step's turn);
        `details` are the kind's own (a web task's evals), added to those the step has. Returns self, to be put
        straight into a StepResult."""
        self.status, self.success, self.answer, self.num_turns = status, success, answer, self.turn
        self.details.update(details or {})
        return self


class StepResult(NamedTuple):
    """What one step returns; unpacks as Gymnasium's (observation, reward, terminated, truncated, info).

    The observation is None when the episode terminated (nothing more to see); a truncated
    episode (round limit) still returns the last observation.
    """

    observation: str | None
    reward: float
    terminated: bool
    truncated: bool
    info: StepInfo

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

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, ResetInfo]: ...

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
