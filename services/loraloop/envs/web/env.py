"""WebEnv: a REAL task in a fresh browser context; BrowserGym actions in, AX-tree text out, REAL grading.

reset() prepares the site (`/config?run_id&task_id`) and opens the task URL; step() runs one
action; `send_msg_to_user`/`report_infeasible` read the site's `/finish` state and grade it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from loraloop.envs.base import ResetInfo, StepInfo, StepResult
from loraloop.envs.web.actions import FINAL_ACTIONS, Action, ActionError, parse_action
from loraloop.envs.web.browser import get_browser
from loraloop.envs.web.evaluate import Judge, grade
from loraloop.envs.web.observe import accessibility_text
from loraloop.envs.web.prompts import INSTRUCTIONS, format_observation
from loraloop.errors import EnvironmentFailure
from loraloop.logs import get_logger
from loraloop.settings import Settings, get_settings
from loraloop.tasks.base import Task
from loraloop.tasks.web.format import WebTask

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext, Page

log = get_logger("loraloop.web")
BUNDLED_ORIGIN = "http://localhost:8090"  # bundled tasks' URL origin; LORALOOP_SITES_URL replaces it
_BID = re.compile(r"^[a-z]*[0-9]+$")


def task_url(task: WebTask, settings: Settings) -> str:
    """The task's site URL, with the bundled sites' origin mapped to where they run."""
    if task.url.startswith(BUNDLED_ORIGIN):
        return settings.sites_url.rstrip("/") + task.url[len(BUNDLED_ORIGIN) :]
    return task.url


NAVIGATED = "Execution context was destroyed"  # Playwright's words for a page read while it navigated


@dataclass
class PageState:
    """What happened in the browser since the last observation: dialogs, crashes, new tabs."""

    dialogs: list[str] = field(default_factory=list)
    crashed: bool = False
    new_tabs: int = 0
    finishing: bool = False  # /finish is being read: a beforeunload dialog lets the page go


class WebEnv:
    """One REAL episode: a fresh context on this process's Chromium; the env the HALO seed trains on."""

    def __init__(
        self,
        task: Task,
        settings: Settings | None = None,
        *,
        max_rounds: int = 15,
        episode_id: str | None = None,
        screenshots: bool = False,
        url: str | None = None,
    ) -> None:
        self.task = task  # a REAL WebTask here; a kind built on this env (browsergym) brings its own
        self.settings = settings or get_settings()
        self.max_rounds = max_rounds
        self.episode_id = episode_id or uuid.uuid4().hex
        self.screenshots = screenshots
        self.instructions = INSTRUCTIONS
        self.examples: list[dict[str, str]] = []
        self.stop: list[str] | None = None
        self.prompt_style = "web"  # goal, past actions and the current page only (kinds/prompts.py)
        self.url = url or task_url(self.web_task, self.settings)  # a kind of its own (browsergym) gives its site's URL
        self.goal = getattr(task, "goal", "")  # a kind whose goal comes from the page sets it at reset
        self.text_bids = False  # StaticText lines carry their element's bid (flatten_axtree)
        self.origin = "{0.scheme}://{0.netloc}".format(urlsplit(self.url))
        self.host = get_browser(self.settings.chromium_path)
        self.context: BrowserContext | None = None
        self.page: Page | None = None
        self.events = PageState()
        self.turn = 0
        self.done = False
        self.last_error = ""
        self.last_screenshot: bytes | None = None
        self.observation = ""  # the latest observation, whole

    # ---- sync interface -------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, ResetInfo]:
        """Prepare the site for this run, open the task URL in a fresh context; return the first
        observation and the URL (the site holds the state; `seed` and `options` change nothing)."""
        self.close()
        self.turn, self.done, self.last_error = 0, False, ""
        return self._run(self._reset()), ResetInfo(url=self.url)

    def step(self, action: str) -> StepResult:
        """Apply one model turn: parse its action and run it, or grade the episode on a final action."""
        if self.done or self.page is None:
            raise EnvironmentFailure(f"episode {self.episode_id} is not running (reset first)")
        self.turn += 1
        try:
            parsed = parse_action(action)
        except ActionError as exc:
            parsed, self.last_error = None, f"invalid action: {exc}"
        info = StepInfo(self.turn, parsed.name if parsed else "invalid", url=self.page.url)
        if parsed is not None:
            info.action = parsed.text()
            if parsed.name in FINAL_ACTIONS:
                return self._run(self._finish(parsed, info))
            self.last_error = self._run(self._act(parsed))
        info.error = self.last_error or None
        observation = self._run(self._observe())
        if self.turn >= self.max_rounds:
            self.done = True
            return StepResult(observation, 0.0, False, True, info.end("round_limit", False))
        return StepResult(observation, 0.0, False, False, info)

    @property
    def web_task(self) -> WebTask:
        """The episode's task as a REAL web task (its site URL, its evals): what this env's own reset and grading
        read; an EnvironmentFailure naming the task for another kind's task that reaches them."""
        if not isinstance(self.task, WebTask):
            raise EnvironmentFailure(f"task {self.task.index} is not a REAL web task: give the env its site's URL")
        return self.task

    @property
    def live_page(self) -> Page:
        """The episode's active page; an EnvironmentFailure when it has none (not reset, or closed)."""
        if self.page is None:
            raise EnvironmentFailure(f"episode {self.episode_id} has no page (reset first)")
        return self.page

    @property
    def live_context(self) -> BrowserContext:
        """The episode's browser context; an EnvironmentFailure when it has none (not reset, or closed)."""
        if self.context is None:
            raise EnvironmentFailure(f"episode {self.episode_id} has no browser context (reset first)")
        return self.context

    def close(self) -> None:
        """Close this episode's context (its tabs and storage); the browser stays for the next one."""
        if self.context is not None:
            context, self.context, self.page = self.context, None, None
            try:
                self.host.run(context.close(), timeout=15)
            except Exception:  # a dead browser took the context with it
                pass

    def _run(self, coro):
        return self.host.run(coro, timeout=self.settings.web_step_timeout_s)

    # ---- browser side (runs on the browser loop) -----------------------------------------------
    async def _reset(self) -> str:
        await self._open_context({"width": 1280, "height": 720}, self.settings.web_action_timeout_ms)
        config = f"{self.url}/config?run_id={self.episode_id}&task_id={self.task.index}&latency=0"
        try:
            # One page for the whole episode: /config, the site, then /finish (_finish). Each page a context opens
            # starts a renderer process; a page each for /config and /finish cost 1.25 CPU-s a reset+finish here
            # against 0.75 s on one page (issue #25: the suite is CPU-bound, and so is a rollout worker).
            page = await self.live_context.new_page()
            await page.goto(config, wait_until="domcontentloaded")
            self.page = page
            await page.goto(self.url, wait_until="domcontentloaded")
        except Exception as exc:
            raise EnvironmentFailure(
                f"task {self.task.index}: site {self.url} did not load: {_first_line(exc)}"
            ) from exc
        self.events.new_tabs = 0
        return await self._observe(goal=True)

    async def _open_context(self, viewport: dict, action_timeout_ms: int) -> None:
        """A fresh context on the pool's browser for this episode, its timeouts set and its pages watched."""
        self.events = PageState()
        self._cdp_sessions: dict = {}
        self.context = context = await self.host.new_context(viewport=viewport)
        context.set_default_timeout(action_timeout_ms)
        context.set_default_navigation_timeout(self.settings.web_load_timeout_ms)
        context.on("page", self._on_page)

    def _on_page(self, page) -> None:
        page.on("dialog", self._on_dialog)
        page.on("crash", self._on_crash)
        if self.page is not None:  # a popup or a new tab: it becomes the active page, as in BrowserGym
            self.events.new_tabs += 1
            self.page = page

    async def _on_dialog(self, dialog) -> None:
        if self.events.finishing and dialog.type == "beforeunload":
            await dialog.accept()  # /finish leaves the page
            return
        self.events.dialogs.append(f"{dialog.type} {dialog.message!r}")
        await dialog.dismiss()

    def _on_crash(self, _page) -> None:
        self.events.crashed = True

    async def _act(self, action: Action) -> str:
        """Run a non-final action; return the error text ('' when it worked)."""
        page = self.live_page
        before = page.url
        try:
            await self._perform(page, action)
            await self._settle()
        except ActionError as exc:
            return str(exc)
        except Exception as exc:
            if self.events.crashed:
                raise EnvironmentFailure(f"the page crashed during {action.text()}") from exc
            back = ""
            if not self.live_page.is_closed():
                await self._stop_loading()  # a timed-out goto leaves a pending load
                if "net::ERR_" in str(exc):  # a navigation that failed: its error page is yet to come
                    await self._await_error_page()
                back = await self._keep_on_site(before) and f"; went back to {self.live_page.url}"
            return f"{action.text()} failed: {_first_line(exc)}{back}"
        if self.events.crashed:
            raise EnvironmentFailure(f"the page crashed during {action.text()}")
        return await self._keep_on_site(before)

    async def _settle(self) -> None:
        """Wait for the DOM of a navigation the action started (not BrowserGym's fixed 0.5 s sleep)."""
        try:
            await self.live_page.wait_for_load_state("domcontentloaded", timeout=self.settings.web_load_timeout_ms)
        except Exception as exc:
            await self._stop_loading()  # keep the page that was there
            raise ActionError(
                f"the page did not load within {self.settings.web_load_timeout_ms / 1000:g} s ({_first_line(exc)})"
            ) from exc

    async def _keep_on_site(self, before: str) -> str:
        """Leaving the task's site is refused: the page goes back and the agent is told."""
        url = self.live_page.url
        if url.startswith(self.origin) or url.startswith("about:"):
            return ""
        try:
            await self.live_page.goto(
                before if before.startswith(self.origin) else self.url, wait_until="domcontentloaded"
            )
        except Exception as exc:
            raise EnvironmentFailure(f"cannot return to the task site after leaving it for {url}") from exc
        return f"navigation to {url} is outside the task's site ({self.origin}); went back"

    async def _perform(self, page, action: Action) -> None:
        a = action.args
        name = action.name
        if name in ("click", "dblclick", "hover", "check", "uncheck"):
            await self._pointer_action(page, action)
        elif name in ("clear", "focus"):
            await getattr(await self._element(page, a["bid"]), name)()
        elif name == "fill":
            await (await self._element(page, a["bid"])).fill(str(a["value"]))
        elif name == "select_option":
            await (await self._element(page, a["bid"])).select_option(a["options"])
        elif name == "press":  # no actionability wait (the element exists): the timeout is the navigation's
            element = await self._element(page, a["bid"])
            await self._navigating(element.press(str(a["key_comb"]), timeout=self._navigation_ms()))
        elif name == "drag_and_drop":
            await (await self._element(page, a["from_bid"])).drag_to(await self._element(page, a["to_bid"]))
        elif name == "upload_file":
            await (await self._element(page, a["bid"])).set_input_files(a["file"])
        elif name == "scroll":
            await page.mouse.wheel(float(a["delta_x"]), float(a["delta_y"]))
        elif name == "goto":
            await page.goto(str(a["url"]), wait_until="domcontentloaded")
        elif name in ("go_back", "go_forward"):
            await getattr(page, name)(wait_until="domcontentloaded")
        elif name == "new_tab":
            self.page = await self.live_context.new_page()
        elif name == "tab_close":
            await self._close_tab(page)
        elif name == "tab_focus":
            pages = self.live_context.pages
            if not isinstance(a["index"], int) or not 0 <= a["index"] < len(pages):
                raise ActionError(f"tab_focus: no tab {a['index']!r} (open tabs: 0..{len(pages) - 1})")
            self.page = pages[a["index"]]
            await self.live_page.bring_to_front()
        elif name == "noop":
            await asyncio.sleep(min(float(a["wait_ms"]), 10_000) / 1000)
        elif name in ("mouse_click", "mouse_move"):
            await getattr(page.mouse, name.removeprefix("mouse_"))(float(a["x"]), float(a["y"]))
        elif name == "keyboard_type":
            await page.keyboard.type(str(a["text"]))
        elif name == "keyboard_press":
            await page.keyboard.press(str(a["key"]))

    async def _pointer_action(self, page, action: Action) -> None:
        """Click, hover or (un)check an element: the element gets the action timeout to become actionable,
        a navigation the action starts gets the load timeout to commit.

        Playwright's own wait for the navigation an input starts (its signal barrier) runs inside the action's
        timeout, so with one call a form whose server answers after 5 s failed as "Timeout 5000ms exceeded" though
        the click had happened, and the pending load was then stopped (seen once in CI: the compose stack's web
        teacher on mail-12, a loaded machine). So a `trial` call checks actionability alone first, then the action
        runs with the longer timeout, its navigation wait still Playwright's."""
        a = action.args
        kwargs = {"button": a["button"], "modifiers": a["modifiers"]} if action.name in ("click", "dblclick") else {}
        element = await self._element(page, a["bid"])
        await getattr(element, action.name)(**kwargs, trial=True)
        await self._navigating(getattr(element, action.name)(**kwargs, timeout=self._navigation_ms()))

    async def _navigating(self, act) -> None:
        """Await an action whose element is ready: a timeout now is the navigation it started not committing,
        which is stopped (the old page stays) and named as the page not loading."""
        from playwright.async_api import TimeoutError as PlaywrightTimeout

        try:
            await act
        except PlaywrightTimeout as exc:
            await self._stop_loading()
            raise ActionError(
                f"the page did not load within {self._navigation_ms() / 1000:g} s ({_first_line(exc)})"
            ) from exc

    def _navigation_ms(self) -> int:
        """How long an action that may start a navigation waits in all: acting, then the new page committing."""
        return self.settings.web_action_timeout_ms + self.settings.web_load_timeout_ms

    async def _close_tab(self, page) -> None:
        if len(self.live_context.pages) == 1:
            raise ActionError("tab_close: the last tab cannot be closed")
        await page.close()
        self.page = self.live_context.pages[-1]

    async def _element(self, page, bid: str):
        if not _BID.match(bid):
            raise ActionError(f"{bid!r} is not a bid (bids look like '12' or 'a12')")
        locator = page.locator(f'[bid="{bid}"]')
        if await locator.count() == 0:
            raise ActionError(f"no element with bid {bid!r} on the page")
        return locator.first

    async def _observe(self, goal: bool = False) -> str:
        if self.events.crashed:
            raise EnvironmentFailure("the page's renderer crashed")
        for attempt in (1, 2):
            try:
                tree = await accessibility_text(
                    self.live_page, await self._cdp(), self.settings.web_axtree_chars, text_bids=self.text_bids
                )
                title = await self.live_page.title()
                break
            except Exception as exc:
                if self.events.crashed or "crash" in str(exc).lower():
                    raise EnvironmentFailure("the page's renderer crashed") from exc
                if attempt == 1 and NAVIGATED in str(exc):
                    # the page navigated while it was read (a tab a link opened, a redirect): once it has loaded,
                    # read it again; seen in a fresh-clone suite on the loaded 2-core VM (test_web_env's new tab)
                    with contextlib.suppress(Exception):  # a page that never loads fails the read below, named
                        await self.live_page.wait_for_load_state(
                            "domcontentloaded", timeout=self.settings.web_load_timeout_ms
                        )
                    continue
                raise EnvironmentFailure(f"cannot read the page at {self.live_page.url}: {_first_line(exc)}") from exc
        tabs = [(p.url, p is self.page) for p in self.live_context.pages]
        notes = [f"A {d} dialog appeared and was dismissed." for d in self.events.dialogs]
        if self.events.new_tabs:
            notes.append(f"{self.events.new_tabs} new tab(s) opened; the newest is now active.")
        self.events.dialogs, self.events.new_tabs = [], 0
        if self.screenshots:
            self.last_screenshot = await self.live_page.screenshot(type="png")
        self.observation = format_observation(
            goal=self.goal if goal else None,
            url=self.live_page.url,
            title=title,
            tabs=tabs,
            error=self.last_error,
            notes=notes,
            tree=tree,
        )
        return self.observation

    async def _await_error_page(self) -> None:
        """Wait (1 s at most) for Chromium's error page after a navigation that failed (a refused URL, a server not
        answering): it commits a moment after Playwright's goto has raised (under 0.3 s here), and an agent left on
        it (chrome-error://) is off the task's site, which _keep_on_site then undoes."""
        from playwright.async_api import Error as PlaywrightError

        with contextlib.suppress(PlaywrightError):
            await self.live_page.wait_for_url(
                lambda url: url.startswith("chrome-error://"), wait_until="commit", timeout=1000
            )

    async def _stop_loading(self) -> None:
        """Stop the page's pending load, if it still has one. A navigation that failed to an error page (the headless
        shell refuses chrome:// URLs with ERR_INVALID_URL) detaches the page's CDP session for a moment ("Not
        attached to an active page"); there is nothing left to stop then, and the next observation reads the page."""
        from playwright.async_api import Error as PlaywrightError

        try:
            await (await self._cdp()).send("Page.stopLoading")
        except PlaywrightError as exc:
            log.info("nothing to stop loading", fields={"episode": self.episode_id, "error": _first_line(exc)})

    async def _cdp(self):
        if self.live_page not in self._cdp_sessions:
            self._cdp_sessions[self.live_page] = await self.live_context.new_cdp_session(self.live_page)
        return self._cdp_sessions[self.live_page]

    async def _finish(self, action: Action, info: StepInfo) -> StepResult:
        """Read the site's final state as REAL does (`<url>/finish`, the JSON in its <pre>) and grade it."""
        answer = str(action.args.get("text", action.args.get("reason", "")))
        # On the episode's own page (no new renderer, see _reset): the episode is over, and a page that asks
        # before it is left (beforeunload) is let go (_on_dialog).
        self.events.finishing = True
        page = self.live_page if not self.live_page.is_closed() else await self.live_context.new_page()
        try:
            await page.goto(f"{self.url}/finish", wait_until="domcontentloaded")
            state = json.loads(await page.inner_text("pre"))
        except Exception as exc:
            raise EnvironmentFailure(
                f"task {self.task.index}: cannot read {self.url}/finish: {_first_line(exc)}"
            ) from exc
        judge = (
            Judge(self.settings.judge_url, self.settings.judge_model, self.settings.judge_api_key)
            if self.settings.judge_url
            else None
        )
        result = await asyncio.get_running_loop().run_in_executor(None, grade, self.web_task, state, answer, judge)
        self.done = True
        details = {"evals": result.results, "final_state_differences": state.get("differences")}
        info.end("completed", result.success, answer, details)
        return StepResult(None, result.reward, True, False, info)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__
