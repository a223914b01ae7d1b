"""tau2 environment benchmark: loraloop's Tau2Env against driving tau2's own AgentGymEnv directly, in one run.

    .venv/bin/python bench/tau2_env.py [--episodes 20] [--domain airline] [--out [PATH]]

Both sides play the same scripted episodes: each task's reference tool calls (tau2's evaluation criteria),
then `done`. The user's only turn, the first, comes from a scripted OpenAI-compatible server on loopback
(tests/helpers.scripted_user) on both sides, and reset is not timed, so the figures hold no model time:

- tau2: `tau2.gym.AgentGymEnv(domain, task_id, ...)` stepped with the JSON tool call strings;
- ours: `Tau2Env` (the gym subclassed to hold the snapshot's task and record the user's calls) stepped with the
  same text, parsed, checked against the episode's tools and turned into events for the trajectory.

Per side: step() wall time per action. Episodes alternate sides (which side goes first alternates too), so
load from other work on the machine hits both alike. Target (issue): our per-step time at most 10% above
tau2's (mean and p50). Exits 1 when an episode's reward differs between the sides or the target is missed.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from results import add_out, machine, percentile, report, timed  # noqa: E402

from loraloop.agents.policy import tool_call_text  # noqa: E402
from loraloop.envs.base import EnvOptions  # noqa: E402
from loraloop.kinds.tau2 import KIND  # noqa: E402
from loraloop.settings import Settings  # noqa: E402
from loraloop.task_registry import load_registry  # noqa: E402
from loraloop.tasks.tau2.snapshot import write_snapshot  # noqa: E402
from tests.helpers import scripted_user  # noqa: E402

TARGET = 0.10
OURS, TAU2 = "loraloop Tau2Env", "tau2 AgentGymEnv"


def script(task) -> list[str]:
    """The episode's actions: the reference tool calls, then `done`."""
    return [tool_call_text(a["name"], a.get("arguments") or {}) for a in task.actions] + [tool_call_text("done", {})]


def play_tau2(task, url: str) -> tuple[list[float], float]:
    """tau2's gym driven directly: (step times, reward)."""
    from tau2.gym import AgentGymEnv

    env = AgentGymEnv(
        domain=task.domain,
        task_id=task.id,
        max_steps=200,
        user_llm="openai/scripted-user",
        user_llm_args={"api_base": url, "api_key": "EMPTY", "temperature": 0.0},
    )
    env.reset()
    times, reward = [], 0.0
    for action in script(task):
        (_, reward, terminated, _, _), seconds = timed(lambda action=action: env.step(action))
        times.append(seconds)
        if terminated:
            break
    return times, reward


def play_ours(task, settings: Settings) -> tuple[list[float], float]:
    """Tau2Env: (step times, reward)."""
    env = KIND.envs.make_env(task, settings, EnvOptions(max_steps=200))
    env.reset()
    times, reward = [], 0.0
    try:
        for action in script(task):
            result, seconds = timed(lambda action=action: env.step(action))
            times.append(seconds)
            reward = result.reward
            if result.done:
                break
    finally:
        env.close()
    return times, reward


def main(argv: list[str] | None = None) -> int:
    """Play both sides alternately, print the table; 1 when a reward differs or the target is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=20, help="episodes per side (default 20)")
    parser.add_argument("--domain", default="airline", help="tau2 domain (default airline, split train)")
    add_out(parser, "tau2_env")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tasks.json"
        write_snapshot(args.domain, "train" if args.domain != "mock" else "base", path)
        tasks = [t for t in load_registry(path).tasks if t.actions]
    times: dict[str, list[float]] = {OURS: [], TAU2: []}
    differ = []
    with scripted_user(["Hi, I need help with my booking."]) as (url, _):
        settings = Settings(tau2_user_llm_base_url=url, tau2_user_llm="scripted-user")
        play_ours(tasks[0], settings), play_tau2(tasks[0], url)  # warm-up: imports, first loads
        for i in range(args.episodes):
            task = tasks[i % len(tasks)]
            sides = [
                (OURS, lambda task=task: play_ours(task, settings)),
                (TAU2, lambda task=task: play_tau2(task, url)),
            ]
            rewards = {}
            for name, play in sides if i % 2 == 0 else sides[::-1]:
                steps, rewards[name] = play()
                times[name] += steps
            if rewards[OURS] != rewards[TAU2]:
                differ.append(f"{task.index}: {rewards}")
    mean = {name: statistics.mean(values) * 1000 for name, values in times.items()}
    p50 = {name: percentile(values, 50) for name, values in times.items()}
    overhead_mean, overhead_p50 = mean[OURS] / mean[TAU2] - 1, p50[OURS] / p50[TAU2] - 1
    rows = "\n".join(
        f"| {name} | {len(times[name])} | {mean[name]:.2f} | {p50[name]:.2f} | {percentile(times[name], 90):.2f} |"
        for name in (OURS, TAU2)
    )
    report(
        f"""## tau2 environment: per-step time, ours against tau2's gym ({args.domain}, {args.episodes} a side)

{machine()}

| side | steps | mean ms | p50 ms | p90 ms |
|---|---|---|---|---|
{rows}

Overhead of ours: mean {overhead_mean:+.1%}, p50 {overhead_p50:+.1%} (target at most {TARGET:+.0%}); rewards
{"differ: " + "; ".join(differ) if differ else "equal on every episode"}.
""",
        args.out,
    )
    if differ:
        print(f"FAILED: rewards differ: {differ}", file=sys.stderr)
    missed = max(overhead_mean, overhead_p50) > TARGET
    if missed:
        print(f"FAILED: overhead above {TARGET:.0%}", file=sys.stderr)
    return 1 if differ or missed else 0


if __name__ == "__main__":
    sys.exit(main())
