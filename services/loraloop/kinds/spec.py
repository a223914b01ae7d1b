"""What one kind of environment brings, as plain data in three parts, plus what HALO's agent may ask of it.

A kind (`shell`, `web`, `tau2`, `browsergym`, or one of a user's own) is an `EnvKind`:

- `tasks` (`TaskFormat`): how its task objects are read, recognised and checked;
- `envs` (`EnvFactory`): how an episode's environment, teacher and tools are made, how its actions are made
  canonical for the exports, how its prompts are laid out, and what its servers need before a rollout;
- `worker` (`WorkerHooks`): what a rollout worker process does for the kind at its start and its stop;
- `agent` (`AgentFacet`): what HALO's orchestrator (agents/) uses when it plays the kind: cache keys and the
  rule for an action that worked, recovery moves, gates, macros, a progress score. Every part is optional;
  a kind without a facet is played by the generic rules.

Like Gymnasium's EnvSpec, a kind is data: the registry (kinds/registry.py) finds it by a module string, and
nothing below the registry asks which kind a task is. This module sits above the env contract (envs/base.py)
and below the kinds' own packages, which build their `KIND` from it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from loraloop.calls import MacroSteps
from loraloop.envs.base import Env, EnvOptions, PromptBuilder, StepInfo

if TYPE_CHECKING:
    from loraloop.replies import Policy
    from loraloop.settings import Settings
    from loraloop.store.records import Step
    from loraloop.tasks.base import Registry, Task, TaskContext

TaskT = TypeVar("TaskT", bound="Task")  # a kind's own task type (ShellTask, WebTask, Tau2Task)


@dataclass(frozen=True)
class TaskFormat(Generic[TaskT]):
    """How a kind's tasks are read:
    - `parse(raw, ctx)`: validate one raw task object and return it (errors name file, task, field);
    - `owns(raw)`: True when a raw task object is this kind's (for folders without a registry.yaml);
    - `layout(path)`: a registry in a published layout this kind reads in place, else None;
    - `missing_files(task)`: files a task names that do not exist."""

    parse: Callable[[Any, TaskContext], TaskT]
    owns: Callable[[Any], bool] = lambda _raw: False
    layout: Callable[[Path], Registry | None] = lambda _path: None
    missing_files: Callable[[TaskT], list[str]] = lambda _task: []


@dataclass(frozen=True)
class EnvFactory(Generic[TaskT]):
    """How a kind's episodes are made and read:
    - `make_env(task, settings, options)`: the environment for one episode;
    - `teacher(task, env)`: the scripted expert policy (raises TaskFormatError when the task has no solution);
    - `canonical_action(text)`: the action as the env understands it (`bash: ls`), None if unparseable;
    - `prompt_style` and `prompt_builder`: how the chat is laid out (None: the generic `chat` layout); exports
      rebuild it by style;
    - `tools(protocol, task)`: OpenAI tool schemas sent with each model request, or None;
    - `preflight(tasks, settings)`: check the servers these tasks need before a rollout starts;
    - `attach(task, settings, handle)` and `release(handle)`, for kinds whose episodes another process can go on
      with (the Task Server's replicas): such envs are `SharedEnv`s; None for kinds whose episodes live in one
      process;
    - `finish_one_step(observation)`: for online GRPO, which plays a completion as a one-step episode, the action
      that finishes the episode after one that did not (the shell: answer with the output's last line); None: an
      action that does not end the episode scores what the env gave it."""

    make_env: Callable[[TaskT, Settings, EnvOptions], Env]
    teacher: Callable[[TaskT, Env], Policy]
    canonical_action: Callable[[str], str | None]
    prompt_style: str = "chat"
    prompt_builder: PromptBuilder | None = None
    tools: Callable[[str, TaskT], list[dict] | None] = lambda _protocol, _task: None
    preflight: Callable[[list[TaskT], Settings], None] = lambda _tasks, _settings: None
    attach: Callable[[TaskT, Settings, dict], Env] | None = None
    release: Callable[[dict], None] | None = None
    protocols: tuple[str, ...] = ("text",)
    max_steps: int = 8  # the round limit when a driver sets none
    finish_one_step: Callable[[str | None], str] | None = None


@dataclass(frozen=True)
class WorkerHooks:
    """What a rollout worker (loraloop.service.worker) does for the kind:
    - `start(settings, say)`: prepare the process before its first episode (clean up what dead workers left,
      start timers, warm pools); `say` reports what it did;
    - `stop()`: release what this process holds (its containers, its browsers) at shutdown."""

    start: Callable[[Settings, Callable[[str], None]], None] = lambda _settings, _say: None
    stop: Callable[[], None] = lambda: None


@dataclass(frozen=True)
class MacroSpec:
    """One macro: its parameters (name, default; calls.REQUIRED for none), argument check, steps and help line.
    `steps(observation, **args)` yields primitive actions in the env's own syntax and is sent the observation
    after each; it raises MacroError when it cannot go on."""

    params: tuple[tuple[str, Any], ...]
    check: Callable[[dict], None]
    steps: Callable[..., MacroSteps]
    usage: str


class Progress(Protocol):
    """An episode's progress score (0..1), updated after every step (EpisodeSession records it on each step)."""

    score: float | None

    def start(self, observation: str) -> None:
        """Take in the first observation, before any step."""

    def update(self, observation: str | None, url: str | None, action: str | None, info: StepInfo) -> float | None:
        """The score after one step: the observation after it (None when the episode ended), the canonical action
        and the env's info (error, success)."""


@dataclass(frozen=True)
class AgentFacet:
    """What HALO's orchestrator asks of a kind; each part optional, the default being the generic rule.
    - `state_key(task_id, observation)`: the action cache's key for a state (None: the task and a digest of the
      observation);
    - `action_worked(info, before, after)`: whether an action that raised no error and did not end the episode
      did what it should (the web: the page changed; the shell: the command exited 0);
    - `target_exists(action, observation)`: whether what a cached action acts on is still there;
    - `recovery(trigger, steps)`: the scripted action that gets a stuck episode moving, in the env's syntax;
    - `high_stakes(observation)`: the place (a web page's URL) whose actions cannot be taken back, else None;
    - `destructive(canonical_action)`: an action that destroys (the shell's `rm -r`), asked of the manager first;
    - `macros`, `macro_place`: the kind's macros by name, and where a reply writes a call;
    - `progress(task)`: a fresh Progress for an episode of the task (None: steps record no score)."""

    state_key: Callable[[str, str], str] | None = None
    action_worked: Callable[[StepInfo, str, str], bool] = lambda _info, _before, _after: True
    target_exists: Callable[[str, str], bool] = lambda _action, _observation: True
    recovery: Callable[[str, list[Step]], str | None] = lambda _trigger, _steps: None
    high_stakes: Callable[[str], str | None] = lambda _observation: None
    destructive: Callable[[str], bool] = lambda _action: False
    macros: Mapping[str, MacroSpec] = field(default_factory=dict)
    macro_place: str = "instead of an action"
    progress: Callable[[Task], Progress] | None = None


@dataclass(frozen=True)
class EnvKind(Generic[TaskT]):
    """One kind of environment: its name, a line saying what it runs, and its parts (see the module)."""

    name: str
    tasks: TaskFormat[TaskT]
    envs: EnvFactory[TaskT]
    worker: WorkerHooks = WorkerHooks()
    agent: AgentFacet = AgentFacet()
    description: str = ""
