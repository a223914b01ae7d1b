"""BrowserGymEnv: a BrowserGym task (its own setup, validate and teardown) in loraloop's Playwright env.

What is loraloop's: the browser pool (one Chromium per process, a fresh context per episode), the action set
(BrowserGym's high-level actions read with `ast`, envs/web/actions.py), the observation (the AX tree with bids,
StaticText carrying its element's bid) and the records. What is BrowserGym's: the task class, built as its own
`BrowserEnv` builds it (`task_entrypoint(seed=...)`), whose `setup` opens the page and gives the goal and whose
`validate(page, chat_messages)` gives the reward and the end after every action, as in `BrowserEnv.step`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from loraloop.envs.base import ResetInfo, StepInfo, StepResult
from loraloop.envs.browsergym.miniwob import miniwob_url
from loraloop.envs.browsergym.sync_page import SyncFacade
from loraloop.envs.web.actions import ActionError, parse_action
from loraloop.envs.web.env import WebEnv, _first_line
from loraloop.errors import EnvironmentFailure
from loraloop.settings import Settings, get_settings
from loraloop.tasks.browsergym.format import BrowserGymTask, task_entrypoint

if TYPE_CHECKING:
    from browsergym.core.task import AbstractBrowserTask

# The web kind's instructions (envs/web/prompts.py) in a third fewer tokens (199 against 304 with SmolLM2's
# template: half of a MiniWoB row's tokens were the system message), BrowserGym's actions on a line, the
# clickable StaticText said
INSTRUCTIONS = """You are a web agent. The page is an accessibility tree, one element a line: [bid] role 'name' \
(a StaticText with a bid can be clicked too). Reply with one action, a Python call, bid a string:
click(bid) fill(bid, text) select_option(bid, option) press(bid, key) hover(bid) keyboard_type(text) \
scroll(dx, dy) noop(wait_ms) goto(url) go_back() send_msg_to_user(text) report_infeasible(reason)
The task ends when its goal is reached or failed (after its Submit button, say); send_msg_to_user \
answers a question the goal asks.

Reply format:
Think: <one sentence about what to do next>
Action: <one action, e.g. click('12')>"""

# What a benchmark's task class needs from loraloop besides its seed (BrowserGym's other benchmarks read their
# servers' addresses from their own environment variables, e.g. WebArena's WA_SHOPPING, so they need no entry).
BENCHMARK_KWARGS = {"miniwob": lambda settings: {"base_url": miniwob_url(settings)}}
HELLO = "Hi! I am your UI assistant, I can perform web tasks for you. What can I help you with?"  # BrowserEnv's


def task_kwargs(task: BrowserGymTask, settings: Settings) -> dict[str, Any]:
    """The arguments loraloop passes to the task class besides the seed (MiniWoB's `base_url`)."""
    make = BENCHMARK_KWARGS.get(task.benchmark)
    return make(settings) if make else {}


def goal_text(goal: Any) -> str:
    """A task's goal as text: BrowserGym's goal is a string or OpenAI-style parts (the text parts are kept)."""
    if goal is None or isinstance(goal, str):
        return goal or ""
    return "\n".join(part["text"] for part in goal if isinstance(part, dict) and part.get("type") == "text")


def _plain(value: Any) -> Any:
    """A task's info made JSON-safe for the records (numbers, strings, lists, dicts; anything else as text)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value if value is None or isinstance(value, (bool, int, float, str)) else str(value)


class BrowserGymEnv(WebEnv):
    """One BrowserGym episode on the pool's browser: BrowserGym's task, loraloop's actions and observation."""

    task: BrowserGymTask

    def __init__(
        self,
        task: BrowserGymTask,
        settings: Settings | None = None,
        *,
        max_rounds: int = 15,
        episode_id: str | None = None,
        screenshots: bool = False,
        seed: Any = None,
    ) -> None:
        settings = settings or get_settings()
        self.kwargs = task_kwargs(task, settings)
        super().__init__(
            task,
            settings,
            max_rounds=max_rounds,
            episode_id=episode_id,
            screenshots=screenshots,
            url=self.kwargs.get("base_url") or "about:blank",
        )
        self.instructions = INSTRUCTIONS
        self.text_bids = True
        if seed is not None:
            task.seed_for(None, seed)  # a driver's seed outside the split fails here, before any page opens
        self.asked_seed = seed  # a driver's explicit seed (EnvOptions.config["seed"])
        self.bg_task: AbstractBrowserTask | None = None
        self.chat: list[dict[str, Any]] = []  # BrowserGym's chat messages, as the task's validate reads them
        self.seed: int | None = None

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, ResetInfo]:
        """Build BrowserGym's task for this episode's seed, let it set up a fresh page; return the first observation
        and its URL, the seed played (the start record keeps it), the setup's event and, in `details`, the task's id
        and what its setup returned (`task_info`). The seed is
        `options["seed"]` (or the driver's), which must be in the task's split, else the one `seed` (the rollout's)
        picks from the split."""
        self.close()
        self.turn, self.done, self.last_error, self.chat = 0, False, "", []
        self.seed = self.task.seed_for(seed, (options or {}).get("seed", self.asked_seed))
        self.bg_task = bg_task = task_entrypoint(self.task.task_id)(seed=self.seed, **self.kwargs)
        self._run(self._open_context(bg_task.viewport, bg_task.timeout))
        self.page = page = self._run(self.live_context.new_page())
        self.events.new_tabs = 0
        try:
            goal, info = bg_task.setup(self._sync(page))
        except Exception as exc:
            at = f" from {self.url}" if self.url != "about:blank" else ""
            self.close()  # the context goes with the failed episode; the pool's browser stays for the next
            raise EnvironmentFailure(
                f"task {self.task.index} (seed {self.seed}): {self.task.task_id} did not set up{at}: {_first_line(exc)}"
            ) from exc
        self.goal = goal_text(goal)
        self.chat = [self._message("assistant", HELLO), self._message("user", self.goal)]
        self.origin = "{0.scheme}://{0.netloc}".format(urlsplit(page.url))
        observation = self._run(self._observe(goal=True))
        setup = {"type": "task_setup", "task_id": self.task.task_id, "seed": self.seed, "task_info": _plain(info)}
        return observation, ResetInfo(
            url=self.live_page.url,
            seed=self.seed,
            events=[setup],
            details={"task_id": self.task.task_id, "task_info": setup["task_info"]},
        )

    def step(self, action: str) -> StepResult:
        """Run one action as BrowserGym's `BrowserEnv.step` does, then ask the task's `validate` for the reward and
        whether the episode ended; a bad action costs the step and comes back as the next observation's error."""
        if self.done or self.page is None:
            raise EnvironmentFailure(f"episode {self.episode_id} is not running (reset first)")
        self.turn += 1
        try:
            parsed = parse_action(action)
        except ActionError as exc:
            parsed, self.last_error = None, f"invalid action: {exc}"
        info = StepInfo(self.turn, parsed.name if parsed else "invalid", url=self.page.url)
        infeasible = False
        if parsed is not None:
            info.action = parsed.text()
            if parsed.name == "send_msg_to_user":
                self.chat.append(self._message("assistant", str(parsed.args["text"])))
                self.last_error = ""
            elif parsed.name == "report_infeasible":
                self.chat.append(self._message("infeasible", str(parsed.args["reason"])))
                self.last_error, infeasible = "", True
            else:
                self.last_error = self._run(self._act(parsed))
        info.error = self.last_error or None
        reward, done, message, task_info = self._validate()
        if message:
            self.chat.append(self._message("user", message))
        info.details["task_info"] = _plain(task_info)
        if done or infeasible:  # BrowserEnv: the task or the agent (terminate_on_infeasible) ends it
            self.done = True
            answers = [m["message"] for m in self.chat if m["role"] == "assistant"][1:]
            return StepResult(
                None, reward, True, False, info.end("completed", reward > 0, answers[-1] if answers else None)
            )
        observation = self._run(self._observe())
        if self.turn >= self.max_rounds:
            self.done = True
            return StepResult(observation, reward, False, True, info.end("round_limit", False))
        return StepResult(observation, reward, False, False, info)

    def close(self) -> None:
        """Tear the task down (BrowserGym's `teardown`) and close this episode's context."""
        task, self.bg_task = self.bg_task, None
        try:
            if task is not None:
                task.teardown()
        finally:
            super().close()

    def _validate(self) -> tuple[float, bool, str, Any]:
        """The task's own verdict on the page as it is now (BrowserGym's `validate`)."""
        try:
            reward, done, message, task_info = self.live_task.validate(self._sync(self.live_page), list(self.chat))
        except Exception as exc:
            raise EnvironmentFailure(
                f"task {self.task.index} (seed {self.seed}): {self.task.task_id}'s validate failed: {_first_line(exc)}"
            ) from exc
        return float(reward), bool(done), str(message or ""), task_info

    @property
    def live_task(self) -> AbstractBrowserTask:
        """BrowserGym's task of the running episode; an EnvironmentFailure when none is set up (reset first)."""
        if self.bg_task is None:
            raise EnvironmentFailure(f"episode {self.episode_id} has no BrowserGym task (reset first)")
        return self.bg_task

    def _sync(self, page) -> SyncFacade:
        """The page as BrowserGym's task code wants it (Playwright's sync API)."""
        return SyncFacade(page, self.host, self.settings.web_step_timeout_s)

    @staticmethod
    def _message(role: str, text: str) -> dict[str, Any]:
        return {"role": role, "timestamp": time.time(), "message": text}
