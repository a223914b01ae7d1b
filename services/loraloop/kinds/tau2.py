"""The tau2 kind: tau2-bench's customer-service domains (airline, retail, telecom, mock) through tau2's gym
interface, an LLM playing the user; tasks come from snapshots (`loraloop tasks snapshot --source tau2`)."""

from __future__ import annotations

import httpx

from loraloop.envs.base import EnvOptions
from loraloop.errors import ServiceUnavailable
from loraloop.kinds.spec import EnvFactory, EnvKind, TaskFormat
from loraloop.tasks.tau2.format import Tau2Task, owns, parse_task
from loraloop.tasks.tau2.snapshot import snapshot_registry

MAX_STEPS = 30  # agent turns (tool calls and messages); tau2's own examples allow 100 orchestrator steps


def make_env(task: Tau2Task, settings, options: EnvOptions):
    """A Tau2Env for the task: tau2's gym on it, the user simulator the options' econfig or the settings name."""
    from loraloop.envs.tau2.env import Tau2Env

    return Tau2Env(
        task,
        settings,
        max_rounds=options.max_steps or MAX_STEPS,
        protocol=options.protocol,
        config=options.config,
        episode_id=options.episode_id,
    )


def teacher(task: Tau2Task, _env):
    """The scripted expert that replays the task's reference actions."""
    from loraloop.envs.tau2.teacher import ScriptedTau2Teacher

    return ScriptedTau2Teacher(task)


def tools(protocol: str, task: Tau2Task) -> list[dict] | None:
    """The task's tool schemas, sent natively with the `tools` protocol (the `text` protocol has them in the prompt)."""
    if protocol != "tools":
        return None
    from loraloop.envs.tau2.env import domain_tools

    return list(domain_tools(task.domain, task.solo)[1])


def canonical_action(text: str) -> str | None:
    """`tau2: name({...})` for a tool call, `say: text` for a message; None for a failed tool call."""
    from loraloop.envs.tau2.protocol import parse_turn

    turn = parse_turn(text)
    return None if turn.kind == "invalid" else turn.canonical()


def preflight(tasks: list[Tau2Task], settings) -> None:
    """Check a user simulator of its own (LORALOOP_TAU2_USER_LLM_BASE_URL) answers when a task needs one, for the
    embedded default (workers may reach it at an address this host does not). The default user, the stack's vLLM,
    is left to whoever starts that server (the loop starts it after this check)."""
    if settings.broker_url or all(task.solo for task in tasks):
        return
    from loraloop.envs.tau2.user import UserLLM

    url = UserLLM.resolve(settings, {}).base_url
    if url == settings.vllm_url:
        return
    try:
        httpx.get(f"{url.rstrip('/')}/models", timeout=5).raise_for_status()
    except httpx.HTTPError as exc:
        raise ServiceUnavailable(
            f"tau2 user simulator unreachable at {url} ({type(exc).__name__}): start vLLM "
            f"(`make vllm-up`) or set LORALOOP_TAU2_USER_LLM_BASE_URL"
        ) from exc


KIND = EnvKind(
    name="tau2",
    description="tau2-bench customer-service tasks (tau2's gym; an LLM plays the user)",
    tasks=TaskFormat(parse=parse_task, owns=owns, layout=snapshot_registry),
    envs=EnvFactory(
        make_env=make_env,
        teacher=teacher,
        canonical_action=canonical_action,
        tools=tools,
        preflight=preflight,
        protocols=("text", "tools"),
        max_steps=MAX_STEPS,
    ),
)
