"""The contract every loraloop environment keeps, close to Gymnasium's, and what each kind brings.

An environment takes the agent's reply as text and answers in text:

- `reset(seed=None, options=None)` starts an episode and returns `(observation, info)`; `info`
  carries what the task computed at reset (`expected`), so a wrong answer can be diagnosed later;
- `step(action)` returns a `StepResult`, which unpacks as Gymnasium's five-tuple
  `(observation, reward, terminated, truncated, info)`: `terminated` when the task ended (an
  answer, a final message), `truncated` when the round limit cut it;
- `close()` releases what the episode held (container, browser context).

An `EnvKind` is one kind of environment (`shell`, `web`) with everything loraloop needs to know
about it: how its tasks are read and checked, how its environment, teacher and tools are made,
how its actions are made canonical for the exports, and how its prompts are laid out. Kinds are
registered in `loraloop.envs`; nothing outside `envs/<kind>/` and `tasks/<kind>/` asks which kind
a task is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, Protocol, TypeVar

if TYPE_CHECKING:
    from loraloop.replies import Policy
    from loraloop.settings import Settings
    from loraloop.tasks.base import Registry, Task, TaskContext

TaskT = TypeVar("TaskT", bound="Task")  # a kind's own task type (ShellTask, WebTask, Tau2Task)

Message = dict[str, str]


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
    prompt_style: str  # how agents/prompts lays out the chat (`chat`, `web`)
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


PromptBuilder = Callable[[str, list[Message], str, list[tuple[str, str]], int], list[Message]]


@dataclass(frozen=True)
class EnvKind(Generic[TaskT]):
    """Everything one kind of environment brings; one instance per kind, registered in loraloop.envs.

    Tasks:
    - `parse_task(raw, ctx)`: validate one raw task object and return it (errors name file, task, field);
    - `owns(raw)`: True when a raw task object is this kind's (for folders without a registry.yaml);
    - `layout(path)`: a registry in a published layout this kind reads in place, else None;
    - `missing_files(task)`: files a task names that do not exist.
    Episodes:
    - `make_env(task, settings, options)`: the environment for one episode;
    - `teacher(task, env)`: the scripted expert policy (raises TaskFormatError when the task has no solution);
    - `tools(protocol, task)`: OpenAI tool schemas sent with each model request for the task, or None;
    - `preflight(tasks, settings)`: check the servers these tasks need before a rollout starts;
    - `attach(task, settings, handle)` and `release(handle)`, for kinds whose episodes another process
      can go on with (the Task Server's replicas): such envs also have `handle()` (what to attach
      with, plain JSON) and `detach()` (leave the episode running); None for kinds whose episodes
      live in one process.
    Data:
    - `canonical_action(text)`: the action as the env understands it (`bash: ls`), None if unparseable;
    - `prompt_style` and `prompt_builder`: how the chat is laid out; exports rebuild it by style.
    Rollout workers (loraloop.service.worker calls these for every kind):
    - `worker_start(settings, say)`: prepare a worker process before its first episode (clean up what
      dead workers left, start timers, warm pools); `say` reports what it did;
    - `worker_stop()`: release what this process holds (its containers, its browsers) at shutdown.
    """

    name: str
    parse_task: Callable[[Any, TaskContext], TaskT]
    owns: Callable[[Any], bool]
    make_env: Callable[[TaskT, Settings, EnvOptions], Env]
    teacher: Callable[[TaskT, Env], Policy]
    canonical_action: Callable[[str], str | None]
    prompt_style: str
    prompt_builder: PromptBuilder | None = None  # None: the generic `chat` layout
    layout: Callable[[Path], Registry | None] = lambda _path: None
    missing_files: Callable[[TaskT], list[str]] = lambda _task: []
    tools: Callable[[str, TaskT], list[dict] | None] = lambda _protocol, _task: None
    preflight: Callable[[list[TaskT], Settings], None] = lambda _tasks, _settings: None
    attach: Callable[[TaskT, Settings, dict], Env] | None = None
    release: Callable[[dict], None] | None = None
    protocols: tuple[str, ...] = ("text",)
    max_steps: int = 8  # the round limit when a driver sets none
    description: str = ""
    worker_start: Callable[[Settings, Callable[[str], None]], None] = lambda _settings, _say: None
    worker_stop: Callable[[], None] = lambda: None
