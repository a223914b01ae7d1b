"""The web kind: REAL's website tasks in a fresh Chromium context, BrowserGym's actions; HALO's facet (envs/web/halo.py,
macros.py, progress.py)."""

from __future__ import annotations

import httpx

from loraloop.calls import REQUIRED, text_arguments
from loraloop.envs.base import EnvOptions
from loraloop.envs.web import halo, macros
from loraloop.envs.web.actions import ActionError, parse_action
from loraloop.envs.web.browser import close_browsers
from loraloop.envs.web.env import BUNDLED_ORIGIN, WebEnv
from loraloop.envs.web.progress import WebProgress
from loraloop.envs.web.prompts import build_web_messages
from loraloop.errors import ServiceUnavailable
from loraloop.kinds.spec import AgentFacet, EnvFactory, EnvKind, MacroSpec, TaskFormat, WorkerHooks
from loraloop.tasks.web.format import WebTask, owns, parse_task
from loraloop.tasks.web.snapshot import snapshot_registry

MAX_STEPS = 15


def make_env(task: WebTask, settings, options: EnvOptions):
    """A WebEnv for the task: a fresh context on this process's browser."""
    return WebEnv(
        task,
        settings,
        max_rounds=options.max_steps or MAX_STEPS,
        screenshots=options.screenshots,
        episode_id=options.episode_id,
    )


def teacher(task: WebTask, env):
    """The scripted expert that maps the task's solution steps onto the current page."""
    from loraloop.envs.web.teacher import ScriptedWebTeacher

    return ScriptedWebTeacher(task, env.origin, page=lambda: env.observation)


def canonical_action(text: str) -> str | None:
    """`web: click('12')`: the action call as BrowserGym writes it; None if the reply holds none."""
    try:
        return f"web: {parse_action(text).text()}"
    except ActionError:
        return None


def require_sites(sites_url: str) -> None:
    """Fail naming the URL when the bundled task sites do not answer (`loraloop serve sites`)."""
    try:
        httpx.get(f"{sites_url.rstrip('/')}/healthz", timeout=5).raise_for_status()
    except httpx.HTTPError as exc:
        raise ServiceUnavailable(
            f"task sites unreachable at {sites_url} ({type(exc).__name__}): start them with "
            f"`loraloop serve sites` or set LORALOOP_SITES_URL"
        ) from exc


def preflight(tasks: list[WebTask], settings) -> None:
    """Check the bundled sites answer when a task runs on them, for the embedded default.

    With a broker the workers reach the sites at an address (`http://sites:8090`) this host may
    not resolve, so only the embedded default checks.
    """
    if not settings.broker_url and any(task.url.startswith(BUNDLED_ORIGIN) for task in tasks):
        require_sites(settings.sites_url)


MACROS = {
    "search_and_open": MacroSpec(
        (("query", REQUIRED),),
        text_arguments("search_and_open", "query"),
        macros.search_and_open,
        "search_and_open(query)  search the site, open the first result",
    ),
    "fill_form": MacroSpec(
        (("fields", REQUIRED), ("submit", None)),
        macros.check_fill_form,
        macros.fill_form,
        "fill_form(fields, submit=None)  fill fields by label, e.g. "
        "fill_form({'To': 'ann@example.com', 'Subject': 'Hi'}, submit='Send')",
    ),
    "add_to_cart_and_checkout": MacroSpec(
        (("quantity", None), ("shipping", None)),
        macros.check_checkout,
        macros.add_to_cart_and_checkout,
        "add_to_cart_and_checkout(quantity=None, shipping=None)  on a product page: add it to the cart, "
        "check out and place the order",
    ),
}


KIND = EnvKind(
    name="web",
    description="REAL website tasks in Chromium (Playwright)",
    tasks=TaskFormat(parse=parse_task, owns=owns, layout=snapshot_registry),
    envs=EnvFactory(
        make_env=make_env,
        teacher=teacher,
        canonical_action=canonical_action,
        prompt_style="web",
        prompt_builder=build_web_messages,
        preflight=preflight,
        max_steps=MAX_STEPS,
    ),
    worker=WorkerHooks(stop=close_browsers),  # a worker's shutdown ends the Chromium it started
    agent=AgentFacet(
        state_key=halo.state_key,
        action_worked=halo.action_worked,
        target_exists=halo.target_exists,
        recovery=halo.recovery,
        high_stakes=halo.high_stakes,
        macros=MACROS,
        progress=WebProgress,
    ),
)
