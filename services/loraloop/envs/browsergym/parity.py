"""Parity with BrowserGym itself: the same seed and the same action sequence give the same rewards in the browsergym
kind as in BrowserGym's own `BrowserEnv` (`gym.make("browsergym/miniwob.<type>")`, reference.py), on the same Debian
Chromium and the same pages. The suite checks a sample of types (tests/integration/envs/test_browsergym_parity.py),
bench/browsergym_parity.py every one of them.

The sequences are written once, on loraloop's side: the scripted solver's actions (reward 1) for the SOLVED types, a
fixed wrong sequence (click the page's last button, else its last element; then `noop()`) for the WRONG ones
(reward 0). Each action on an element is replayed on BrowserGym's side on the same element (found by its path in the
DOM, both sides having built the same page from the same seed), under the bid BrowserGym gave it. Every step's reward,
end and MiniWoB's raw reward must match, and so must the goal. BrowserGym runs with its fast settings (`slow_mo=0`, no
pre-observation wait: timing only; the task code, its seed and its grading are unchanged).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from loraloop.envs.browsergym.env import BrowserGymEnv
from loraloop.envs.browsergym.miniwob import local_url
from loraloop.envs.browsergym.reference import reference_env, release_playwright
from loraloop.envs.browsergym.teacher import goal_of, nodes, solve
from loraloop.tasks.browsergym.format import one_seed_task

SOLVED = (
    "click-button",
    "click-button-sequence",
    "click-dialog-2",
    "click-link",
    "click-tab",
    "click-tab-2",
    "click-collapsible",
    "click-checkboxes",
    "click-option",
    "click-scroll-list",
    "choose-list",
    "enter-text",
    "enter-date",
    "login-user",
    "focus-text-2",
    "find-word",
    "odd-or-even",
    "simple-arithmetic",
    "simple-algebra",
    "read-table",
    "email-inbox",
    "unicode-test",
)
WRONG = (
    "click-menu",
    "click-shades",
    "count-shape",
    "guess-number",
    "navigate-tree",
    "phone-book",
    "search-engine",
    "social-media",
    "text-transform",
    "book-flight",
)
SEED = 1000  # the first held-out seed: nothing here tunes the solver
PATH_JS = """bid => { let el = document.querySelector(`[bid="${bid}"]`); const path = [];
  while (el && el.parentElement) { path.unshift([...el.parentElement.children].indexOf(el)); el = el.parentElement; }
  return path; }"""
BID_AT_JS = """path => { let el = document.documentElement;
  for (const i of path) { el = el && el.children[i]; } return el ? el.getAttribute('bid') : null; }"""
_BID_ARG = re.compile(r"^(\w+)\('([^']+)'")


def wrong_action(observation: str, turn: int) -> str:
    """The fixed wrong sequence: the last button (else the last element with a bid), then noop()."""
    if turn:
        return "noop()"
    found = [n for n in nodes(observation) if n.bid]
    buttons = [n for n in found if n.role == "button"]
    target = (buttons or found)[-1] if found else None
    return f"click({target.bid!r})" if target else "noop()"


@dataclass
class Timings:
    """Seconds of an episode's reset and of each of its steps (observation included), as a caller waits for them."""

    reset: float = 0.0
    steps: list[float] = field(default_factory=list)


def play_ours(task_type: str, settings, timings: Timings | None = None) -> tuple[str, list]:
    """Our episode: the goal and, per step, the action, the DOM path of the element it names, and the outcome;
    `timings` gets the reset's and each step's seconds."""
    timings = timings if timings is not None else Timings()
    task = one_seed_task(f"miniwob.{task_type}", SEED, "parity")
    env = BrowserGymEnv(task, settings, max_rounds=15)
    steps: list = []
    try:
        began = time.perf_counter()
        observation, _ = env.reset(seed=0)
        timings.reset = time.perf_counter() - began
        goal, history = goal_of(observation), list[str]()
        for turn in range(15 if task_type in SOLVED else 2):
            action = (
                solve(task_type, goal, observation, turn, history) or "noop()"
                if task_type in SOLVED
                else wrong_action(observation, turn)
            )
            history.append(action)
            named = _BID_ARG.match(action)
            page = env.page
            if page is None:
                raise RuntimeError(f"{task_type}: loraloop's env has no page after reset")
            path = env.host.run(page.evaluate(PATH_JS, named.group(2)), timeout=30) if named else None
            began = time.perf_counter()
            step = env.step(action)
            timings.steps.append(time.perf_counter() - began)
            steps.append((action, path, (step.reward, step.terminated, _raw(step.info.details["task_info"]))))
            if step.done:
                break
            observation = step.observation or ""  # an episode going on shows a page
    finally:
        env.close()
    return goal, steps


def play_browsergym(
    task_type: str, executable: str, steps: list, fast: bool = True, timings: Timings | None = None
) -> tuple[str, list]:
    """The same actions on the same elements in BrowserGym's own env; its goal and its outcomes. `fast`: BrowserGym's
    fast settings (`slow_mo=0`, no pre-observation wait), else its defaults; `timings` gets the reset's and each
    step's seconds."""
    timings = timings if timings is not None else Timings()
    speed = {"slow_mo": 0, "pre_observation_delay": 0.0} if fast else {}
    env = reference_env(f"miniwob.{task_type}", executable, task_kwargs={"base_url": local_url()}, **speed)
    outcomes = []
    try:
        began = time.perf_counter()
        obs, _ = env.reset(seed=SEED)
        timings.reset = time.perf_counter() - began
        page = env.unwrapped.page
        for action, path, _ in steps:
            if path is not None:
                bid = page.evaluate(BID_AT_JS, path)
                if not bid:
                    raise RuntimeError(f"{task_type}: BrowserGym marked no element at {path} for {action}")
                named = _BID_ARG.match(action)  # it named an element on loraloop's side, so it matches here
                if named:
                    action = f"{named.group(1)}({bid!r}{action[named.end() :]}"
            began = time.perf_counter()
            obs, reward, terminated, _, info = env.step(action)
            timings.steps.append(time.perf_counter() - began)
            if obs["last_action_error"]:
                raise RuntimeError(f"{task_type}: BrowserGym's {action}: {obs['last_action_error']}")
            outcomes.append((float(reward), bool(terminated), _raw(info["task_info"])))
            page = env.unwrapped.page
        return obs["goal"], outcomes
    finally:
        env.close()
        release_playwright()


def _raw(task_info: dict) -> float:
    """MiniWoB's raw reward from a step's task info (0 where it set none)."""
    return float(task_info.get("RAW_REWARD_GLOBAL") or 0)


@dataclass(frozen=True)
class Parity:
    """One type's comparison: both sides' goals and per-step outcomes (reward, terminated, raw reward)."""

    task_type: str
    goal: str
    their_goal: str
    ours: list
    theirs: list

    @property
    def matches(self) -> bool:
        """Same goal, and the same outcome at every step."""
        return self.goal == self.their_goal and [o for *_, o in self.ours] == self.theirs

    @property
    def reward(self) -> float:
        """loraloop's last reward (BrowserGym's is the same where `matches`)."""
        return self.ours[-1][2][0]


def compare(task_type: str, settings, executable: str) -> Parity:
    """Play `task_type`'s sequence on loraloop's side, replay it on BrowserGym's, and return both."""
    goal, ours = play_ours(task_type, settings)
    their_goal, theirs = play_browsergym(task_type, executable, ours)
    return Parity(task_type, goal, their_goal, ours, theirs)
