"""The shell kind: AgentBench's OS-interaction tasks in a fresh container with one bash shell."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from loraloop.calls import REQUIRED, text_arguments
from loraloop.envs.base import EnvOptions
from loraloop.envs.shell import halo
from loraloop.envs.shell.protocol import ROUND_LIMIT, parse_action
from loraloop.envs.shell.tools import TOOLS, parse_tool_call
from loraloop.errors import LoraloopError, ServiceUnavailable
from loraloop.kinds.spec import AgentFacet, EnvFactory, EnvKind, MacroSpec, TaskFormat, WorkerHooks
from loraloop.tasks.shell.agentbench import agentbench_registry
from loraloop.tasks.shell.format import ShellTask, missing_scripts, parse_task


def owns(raw: Any) -> bool:
    """True for an object shaped like an AgentBench task (a description and an evaluation)."""
    return isinstance(raw, dict) and "description" in raw and "evaluation" in raw


def make_env(task: ShellTask, settings, options: EnvOptions):
    """A ShellEnv for the task: its container, its shell and AgentBench's grading."""
    from loraloop.envs.shell.env import ShellEnv

    return ShellEnv(
        task,
        settings,
        max_rounds=options.max_steps or ROUND_LIMIT,
        protocol=options.protocol,
        episode_id=options.episode_id,
        shared=options.shared,
    )


def attach(task: ShellTask, settings, handle: dict):
    """Go on with an episode another process started, from its `handle()`: its container and saved shell."""
    from loraloop.envs.shell.env import ShellEnv

    return ShellEnv.attach(task, settings, **handle)


def release(handle: dict) -> None:
    """Remove an episode's container, whichever process started it."""
    from loraloop.envs.shell import docker

    docker.remove(handle["container"])


def teacher(task: ShellTask, _env):
    """The scripted expert that replays the task's example solution."""
    from loraloop.envs.shell.teacher import ScriptedTeacher

    return ScriptedTeacher(task)


def canonical_action(text: str) -> str | None:
    """`bash: ls`, `answer: 3` or `finish` for a text or tool-call reply; None if it holds no action."""
    parsed = parse_tool_call(text) or parse_action(text)
    if parsed.kind == "invalid":
        return None
    return parsed.kind if parsed.kind == "finish" else f"{parsed.kind}: {parsed.content.strip()}"


def preflight(tasks: list[ShellTask], settings) -> None:
    """For the embedded default (workers do both at their start): check the engine has the environment image, and
    remove the containers of a run on this host that died (`kill -9` of `loraloop train rl` mid-rollout left its
    pool's containers running until something reaped them)."""
    from loraloop.envs.shell import docker

    if not settings.broker_url:
        if not docker.image_exists(settings.os_env_image):
            raise ServiceUnavailable(f"image {settings.os_env_image} is missing: run 'make images'")
        docker.reap()


def reap_every(interval_s: float, say: Callable[[str], None]) -> threading.Thread:
    """Remove dead owners' containers on a timer, in a daemon thread; an engine away is said, then retried."""
    from loraloop.envs.shell import docker

    def loop() -> None:
        while True:
            time.sleep(interval_s)
            try:
                docker.reap()
            except LoraloopError as exc:  # the engine is back on the next tick, or the worker says so
                say(f"reaper: {exc}")

    thread = threading.Thread(target=loop, name="reaper", daemon=True)
    thread.start()
    return thread


def worker_start(settings, say: Callable[[str], None]) -> None:
    """A rollout worker's start: remove containers whose owner process died (a worker killed with
    `kill -9`), again every LORALOOP_REAP_INTERVAL_S, and warm the container pool."""
    from loraloop.envs.shell import docker
    from loraloop.envs.shell.pool import get_pool

    reaped = docker.reap()
    if reaped:
        say(f"removed {reaped} environment container(s) left by a process that died")
    reap_every(settings.reap_interval_s, say)
    get_pool(settings.pool_size, settings.output_cap_bytes).warm(
        settings.os_env_image, docker.Limits.from_settings(settings)
    )


def worker_stop() -> None:
    """A rollout worker's shutdown: remove this process's containers."""
    from loraloop.envs.shell import docker

    docker.reap(owner=docker.owner_id())


def finish_one_step(observation: str | None) -> str:
    """The action that finishes a one-step episode (online GRPO) after a command: answer with its output's last
    line, as the scripted teacher would."""
    output = (observation or "").split("\n\n", 1)[-1].strip().splitlines()
    return f"Act: answer({output[-1].strip() if output else ''})"


MACROS = {
    "inspect_then_answer": MacroSpec(
        (("path", REQUIRED),),
        text_arguments("inspect_then_answer", "path"),
        halo.inspect_then_answer,
        "inspect_then_answer(path)  show a file or folder, answer with what it holds",
    ),
    "find_and_count": MacroSpec(
        (("directory", REQUIRED), ("pattern", REQUIRED)),
        text_arguments("find_and_count", "directory", "pattern"),
        halo.find_and_count,
        "find_and_count(directory, pattern)  count the files named like pattern (e.g. '*.log'), answer the count",
    ),
}


KIND = EnvKind(
    name="shell",
    description="AgentBench OS-interaction tasks in a Docker container",
    tasks=TaskFormat(parse=parse_task, owns=owns, layout=agentbench_registry, missing_files=missing_scripts),
    envs=EnvFactory(
        make_env=make_env,
        teacher=teacher,
        canonical_action=canonical_action,
        tools=lambda protocol, _task: TOOLS if protocol == "tools" else None,
        attach=attach,
        release=release,
        preflight=preflight,
        protocols=("text", "tools"),
        max_steps=ROUND_LIMIT,
        finish_one_step=finish_one_step,
    ),
    worker=WorkerHooks(start=worker_start, stop=worker_stop),
    agent=AgentFacet(
        action_worked=halo.action_worked,
        recovery=halo.recovery,
        destructive=halo.destructive,
        macros=MACROS,
        macro_place="on the Act line instead of bash",
    ),
)
