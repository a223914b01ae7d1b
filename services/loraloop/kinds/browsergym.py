"""The browsergym kind: any BrowserGym task class (MiniWoB++ first) in a fresh Chromium context of loraloop's pool,
BrowserGym's high-level actions, the AX tree with bids; the task's own validate gives the reward."""

from __future__ import annotations

from loraloop.envs.base import EnvOptions
from loraloop.envs.web.browser import close_browsers
from loraloop.envs.web.prompts import build_web_messages
from loraloop.kinds.spec import EnvFactory, EnvKind, TaskFormat, WorkerHooks
from loraloop.kinds.web import canonical_action
from loraloop.tasks.browsergym.format import BrowserGymTask, owns, parse_task

MAX_STEPS = 15  # MiniWoB's episodes take 1 to 13 actions (click-checkboxes-large: up to 12 boxes and Submit)


def make_env(task: BrowserGymTask, settings, options: EnvOptions):
    """A BrowserGymEnv for the task on this process's browser; `options.config["seed"]` asks for one seed."""
    from loraloop.envs.browsergym.env import BrowserGymEnv

    return BrowserGymEnv(
        task,
        settings,
        max_rounds=options.max_steps or MAX_STEPS,
        screenshots=options.screenshots,
        episode_id=options.episode_id,
        seed=options.config.get("seed"),
    )


def teacher(task: BrowserGymTask, env):
    """The scripted solver: reads the goal and the current observation, never the page's internals."""
    from loraloop.envs.browsergym.teacher import ScriptedBrowserGymTeacher

    return ScriptedBrowserGymTeacher(task, page=lambda: env.observation)


def preflight(tasks: list[BrowserGymTask], settings) -> None:
    """Check MINIWOB_URL serves MiniWoB's pages when a task is MiniWoB's, for the embedded default (with a broker
    the workers may reach an address, `http://sites:8090`, this host does not resolve)."""
    if settings.broker_url or not any(task.benchmark == "miniwob" for task in tasks):
        return
    from loraloop.envs.browsergym.miniwob import check_url, miniwob_url

    check_url(miniwob_url(settings))


KIND = EnvKind(
    name="browsergym",
    description="BrowserGym tasks (MiniWoB++) in Chromium (Playwright), graded by the task's own code",
    tasks=TaskFormat(parse=parse_task, owns=owns),
    envs=EnvFactory(
        make_env=make_env,
        teacher=teacher,
        canonical_action=canonical_action,
        prompt_style="web",
        prompt_builder=build_web_messages,
        preflight=preflight,
        max_steps=MAX_STEPS,
    ),
    worker=WorkerHooks(stop=close_browsers),
)
