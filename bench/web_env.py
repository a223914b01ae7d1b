"""Web environment benchmark: loraloop's WebEnv against BrowserGym's BrowserEnv on the bundled sites.

    .venv/bin/python bench/web_env.py [--tasks 12] [--sites-url URL] [--slow-mo MS] [--out [PATH]]

Both sides play the same scripted episodes (each task's `solution`, every step mapped to an action
with the scripted teacher's `step_action` on that side's own observation) with the same Chromium
binary and launch flags, against the same sites server:

- ours: `WebEnv` (one shared Chromium, a fresh context per episode, observation = Chromium's AX tree);
- BrowserGym: `browsergym.core.env.BrowserEnv` with its defaults (a new Chromium plus a chat-window
  Chromium per reset, a 0.5 s pre-observation delay and DOM snapshot + AX tree + screenshot after
  every action) running `BundledTask`, a REAL-style task that opens `/config` then the task URL and
  grades `/finish` with loraloop's `grade` when the agent messages the user.

Per side: reset() wall time per episode and step() wall time per action (the mapping from
observation to action is outside the timing). Episodes are interleaved (task by task, alternating
which side goes first) so that load from other work on the machine hits both sides alike. One
untimed warm-up reset per side starts the Playwright drivers (and our shared Chromium).

BrowserGym tasks inherit `slow_mo = 1000` ms (REAL's webclones tasks keep it); the baseline here uses
`--slow-mo 0` unless told otherwise, i.e. BrowserGym at its fastest.

Target (issue): our step p50 at least 3x faster than BrowserGym's, and the same outcome (success or
not) for every episode. Exits 1 when an outcome differs or the target is missed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from browsergym.core.env import BrowserEnv
from browsergym.core.task import AbstractBrowserTask
from browsergym.utils.obs import flatten_axtree_to_str
from results import add_out, machine, percentile, report, timed
from rich.console import Console
from rich.table import Table

from loraloop.envs.browsergym.reference import REFERENCE_ACTIONS, use_system_chromium
from loraloop.envs.web.env import WebEnv, task_url
from loraloop.envs.web.evaluate import grade
from loraloop.envs.web.teacher import step_action
from loraloop.settings import Settings
from loraloop.task_registry import load_registry
from loraloop.tasks.web.format import WebTask
from loraloop_sites import serving

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "configs" / "tasks" / "web"
TARGET = 3.0
OURS, BGYM = "loraloop WebEnv", "BrowserGym BrowserEnv"
# BrowserGym's default action subsets plus its own check/uncheck (the scripted solutions tick radio buttons with
# check('bid'), as WebEnv accepts): envs/browsergym/reference.py, shared with the browsergym kind's parity test.
BGYM_ACTIONS = REFERENCE_ACTIONS


@dataclass
class Episode:
    """One scripted episode on one side: its outcome and timings (seconds)."""

    success: bool
    reset_s: float
    steps_s: list[float] = field(default_factory=list)
    trace: list[str] = field(default_factory=list)  # each action, with the env's error text if any

    def record(self, action: str, seconds: float, error: str) -> None:
        """Note one step: its wall time and the action (with its error) for the mismatch report."""
        self.steps_s.append(seconds)
        self.trace.append(f"{action} -> {error}" if error else action)


def pick_tasks(count: int) -> list[WebTask]:
    """`count` tasks in registry order (test split, then train), alternating shop and mail."""
    registry = load_registry(REGISTRY)
    ordered = registry.select("test") + registry.select("train")
    shop = [t for t in ordered if "/shop" in t.url]
    mail = [t for t in ordered if "/mail" in t.url]
    mixed = [t for pair in zip(shop, mail) for t in pair]
    return mixed[:count]


@contextmanager
def sites_server(url: str | None) -> Iterator[str]:
    """The sites' base URL: `url` as given, or the bundled sites served by uvicorn in a thread here."""
    if url:
        yield url.rstrip("/")
        return
    with serving() as served:
        yield served


class BundledTask(AbstractBrowserTask):
    """A bundled REAL task for BrowserGym: REAL's `/config` + task URL setup, `/finish` grading."""

    def __init__(self, seed: int, task: WebTask, url: str, slow_mo: int) -> None:
        super().__init__(seed)
        self.task, self.url = task, url
        self.slow_mo = slow_mo

    def setup(self, page) -> tuple[str, dict]:
        """Reset this run's site state (cookie-bound run id), then open the task URL."""
        page.goto(f"{self.url}/config?run_id={uuid.uuid4().hex}&task_id={self.task.index}&latency=0")
        page.goto(self.url)
        return self.task.goal, {}

    def validate(self, page, chat_messages: list[dict]) -> tuple[float, bool, str, dict]:
        """Not done until the agent messages the user (or reports infeasible); then grade `/finish`."""
        last = chat_messages[-1]
        if last["role"] not in ("assistant", "infeasible"):
            return 0.0, False, "", {}
        finish = page.context.new_page()
        try:
            finish.goto(f"{self.url}/finish")
            state = json.loads(finish.inner_text("pre"))
        finally:
            finish.close()
        result = grade(self.task, state, last["message"])
        return result.reward, True, "", {"success": result.success}


def play_ours(task: WebTask, settings: Settings) -> Episode:
    """One scripted episode through WebEnv."""
    env = WebEnv(task, settings, max_rounds=len(task.solution) + 1)
    try:
        (observation, _info), reset_s = timed(env.reset)
        episode = Episode(False, reset_s)
        for step in task.solution:
            action = step_action(step, observation, settings.sites_url)
            result, step_s = timed(lambda action=action: env.step(action))
            episode.record(action, step_s, (result.info.error or ""))
            if result.done:
                episode.success = bool(result.info.success)
                break
            observation = result.observation
        return episode
    finally:
        env.close()


def browsergym_env(task: WebTask, settings: Settings, slow_mo: int) -> BrowserEnv:
    """BrowserGym's env for one bundled task, with its defaults but for the action set (see BGYM_ACTIONS)."""
    return BrowserEnv(
        task_entrypoint=BundledTask,
        headless=True,
        action_mapping=BGYM_ACTIONS.to_python_code,
        task_kwargs={"task": task, "url": task_url(task, settings), "slow_mo": slow_mo},
    )


def play_browsergym(task: WebTask, settings: Settings, slow_mo: int) -> Episode:
    """One scripted episode through BrowserGym's BrowserEnv (its observation and delays)."""
    env = browsergym_env(task, settings, slow_mo)
    try:
        (obs, _info), reset_s = timed(env.reset)
        episode = Episode(False, reset_s)
        for step in task.solution:
            action = step_action(step, flatten_axtree_to_str(obs["axtree_object"]), settings.sites_url)
            (obs, _reward, terminated, truncated, info), step_s = timed(lambda action=action: env.step(action))
            episode.record(action, step_s, obs["last_action_error"])
            if terminated or truncated:
                episode.success = bool(info["task_info"].get("success"))
                break
        return episode
    finally:
        env.close()


def warm_up(task: WebTask, settings: Settings, slow_mo: int) -> None:
    """An untimed reset per side: starts both Playwright drivers and WebEnv's shared Chromium."""
    ours = WebEnv(task, settings)
    ours.reset()
    ours.close()
    theirs = browsergym_env(task, settings, slow_mo)
    theirs.reset()
    theirs.close()


def run(tasks: list[WebTask], settings: Settings, slow_mo: int) -> dict[str, list[Episode]]:
    """Every task on both sides, interleaved, alternating which side goes first."""
    sides = {OURS: lambda t: play_ours(t, settings), BGYM: lambda t: play_browsergym(t, settings, slow_mo)}
    episodes: dict[str, list[Episode]] = {OURS: [], BGYM: []}
    for i, task in enumerate(tasks):
        order = [OURS, BGYM] if i % 2 == 0 else [BGYM, OURS]
        for side in order:
            episodes[side].append(sides[side](task))
        print(
            f"{task.index}: "
            + ", ".join(
                f"{side} {'ok' if episodes[side][-1].success else 'FAIL'} "
                f"step p50 {statistics.median(episodes[side][-1].steps_s) * 1000:.0f} ms"
                for side in (OURS, BGYM)
            ),
            file=sys.stderr,
        )
    return episodes


def per_episode_table(tasks: list[WebTask], episodes: dict[str, list[Episode]]) -> Table:
    """A Rich table: each episode's outcome, reset time and median step time on both sides."""
    table = Table(title="episodes (ms)")
    for column in ("task", "steps", "ours ok", "BGym ok", "ours reset", "BGym reset", "ours step p50", "BGym step p50"):
        table.add_column(column, justify="left" if column == "task" else "right", no_wrap=True)
    for task, ours, theirs in zip(tasks, episodes[OURS], episodes[BGYM]):
        table.add_row(
            task.index,
            f"{len(ours.steps_s)}/{len(theirs.steps_s)}",
            str(ours.success),
            str(theirs.success),
            f"{ours.reset_s * 1000:.0f}",
            f"{theirs.reset_s * 1000:.0f}",
            f"{statistics.median(ours.steps_s) * 1000:.0f}",
            f"{statistics.median(theirs.steps_s) * 1000:.0f}",
            style=None if ours.success == theirs.success else "bold red",
        )
    return table


def print_traces(tasks: list[WebTask], episodes: dict[str, list[Episode]], indexes: list[str]) -> None:
    """Both sides' actions (and action errors) for each listed episode, to stderr."""
    for task, ours, theirs in zip(tasks, episodes[OURS], episodes[BGYM]):
        if task.index in indexes:
            for side, episode in ((OURS, ours), (BGYM, theirs)):
                print(f"  {task.index} {side} ({'solved' if episode.success else 'failed'}):", file=sys.stderr)
                for line in episode.trace:
                    print(f"    {line[:300]}", file=sys.stderr)


def markdown(episodes: dict[str, list[Episode]], mismatched: list[str], slow_mo: int) -> tuple[str, float]:
    """The summary as Markdown (per side: reset and step p50/p95, solved) and the step p50 speed-up."""
    resets = {side: [e.reset_s for e in eps] for side, eps in episodes.items()}
    steps = {side: [s for e in eps for s in e.steps_s] for side, eps in episodes.items()}
    lines = [
        f"## Web environment benchmark: {len(episodes[OURS])} scripted episodes of {REGISTRY.relative_to(ROOT)}",
        "",
        f"{machine()}; BrowserGym task slow_mo {slow_mo} ms.",
        "",
        "| side | resets | reset p50 ms | reset p95 ms | steps | step p50 ms | step p95 ms | solved |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for side, eps in episodes.items():
        lines.append(
            f"| {side} | {len(resets[side])} | {percentile(resets[side], 50):.0f} | "
            f"{percentile(resets[side], 95):.0f} | {len(steps[side])} | {percentile(steps[side], 50):.0f} | "
            f"{percentile(steps[side], 95):.0f} | {sum(e.success for e in eps)}/{len(eps)} |"
        )
    step_speedup = percentile(steps[BGYM], 50) / percentile(steps[OURS], 50)
    reset_speedup = percentile(resets[BGYM], 50) / percentile(resets[OURS], 50)
    lines += [
        "",
        f"- speed-up, step p50 (BrowserGym / ours): {step_speedup:.1f}x (target >= {TARGET:g}x: "
        f"{'met' if step_speedup >= TARGET else 'MISSED'})",
        f"- speed-up, reset p50 (BrowserGym / ours): {reset_speedup:.1f}x",
        f"- outcomes: {len(episodes[OURS]) - len(mismatched)}/{len(episodes[OURS])} episodes match"
        + (f"; MISMATCH: {', '.join(mismatched)}" if mismatched else ""),
        "",
    ]
    return "\n".join(lines), step_speedup


def main(argv: list[str] | None = None) -> int:
    """Run both sides interleaved, print the tables; 1 when an outcome differs or the target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=12, help="tasks to play on each side (default 12)")
    parser.add_argument("--sites-url", default=None, help="running sites (default: serve them in this process)")
    parser.add_argument(
        "--slow-mo",
        type=int,
        default=0,
        help="BrowserGym task slow_mo in ms (default 0; BrowserGym's task default is 1000)",
    )
    add_out(parser, "web_env")
    args = parser.parse_args(argv)
    tasks = pick_tasks(args.tasks)
    if not tasks:
        parser.error("--tasks must be at least 1")
    with sites_server(args.sites_url) as url:
        settings = Settings(sites_url=url)
        use_system_chromium(settings.chromium_path)
        warm_up(tasks[0], settings, args.slow_mo)
        episodes = run(tasks, settings, args.slow_mo)
    mismatched = [t.index for t, a, b in zip(tasks, episodes[OURS], episodes[BGYM]) if a.success != b.success]
    Console(width=120).print(per_episode_table(tasks, episodes))
    table, step_speedup = markdown(episodes, mismatched, args.slow_mo)
    report(table, args.out)
    if mismatched:
        print(f"FAILED: outcomes differ between the sides for {', '.join(mismatched)}", file=sys.stderr)
        print_traces(tasks, episodes, mismatched)
    if step_speedup < TARGET:
        print(f"FAILED: step p50 speed-up {step_speedup:.1f}x is below the {TARGET:g}x target", file=sys.stderr)
    return 1 if mismatched or step_speedup < TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
