"""Shell environment benchmark: reset and step latency against plain `docker run` + `docker exec`.

    .venv/bin/python bench/shell_env.py [--episodes 20] [--steps 40] [--pool 4] [--out]

Needs a Docker engine with loraloop/os-env:latest. All rows are measured in this run, on the same
image, task and commands:

- baseline reset: `docker run -d IMAGE sleep infinity` then `docker exec` of the task's init;
- baseline init: `docker exec` of the init alone (what "plus the task's init" means);
- cold reset: ShellEnv.reset() with no pool (container started on demand, shell opened, init run);
- warm reset: ShellEnv.reset() with a pool of started containers whose shell is already open
  (the pool refills between episodes, as it does while a model thinks);
- baseline step: `docker exec CONTAINER bash -c COMMAND` (a new process per command);
- step: ShellEnv.step() of the same command through the persistent interactive shell.

Targets (issue #3): warm reset p50 <= 150 ms + init p50; step p50 <= 1.3 x baseline step p50.
Exits 1 when a target is missed, so it can gate a change.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from results import add_out, percentile, report, timed

from loraloop.envs.shell import docker
from loraloop.envs.shell.env import ShellEnv
from loraloop.envs.shell.pool import get_pool
from loraloop.settings import Settings
from loraloop.tasks.shell.format import parse_shell_task

ROOT = Path(__file__).resolve().parents[1]
INIT = "mkdir -p /root/data && for i in 1 2 3 4 5; do echo line $i > /root/data/f$i.txt; done"
COMMAND = "ls /root/data | wc -l"
TASK = {
    "description": "How many files are in /root/data? Answer with the number only.",
    "create": {"init": INIT},
    "evaluation": {"match": "5"},
}


def seconds(fn) -> float:
    """Seconds one call takes."""
    return timed(fn)[1]


def docker_cli(*args: str) -> str:
    """Run the docker CLI, failing loudly (the bench has no use for a half-working engine)."""
    return subprocess.run(["docker", *args], check=True, capture_output=True, text=True).stdout.strip()


def baseline(image: str, episodes: int, steps: int) -> dict[str, list[float]]:
    """Plain docker: run + exec init per episode, exec per command."""
    resets, inits, execs = [], [], []
    for _ in range(episodes):
        holder: list[str] = []
        resets.append(
            seconds(
                lambda holder=holder: (
                    holder.append(docker_cli("run", "-d", "--network", "none", image, "sleep", "infinity")),
                    docker_cli("exec", holder[0], "bash", "-c", INIT),
                )
            )
        )
        inits.append(seconds(lambda holder=holder: docker_cli("exec", holder[0], "bash", "-c", INIT)))
        for _ in range(steps // episodes or 1):
            execs.append(seconds(lambda holder=holder: docker_cli("exec", holder[0], "bash", "-c", COMMAND)))
        docker_cli("rm", "-f", holder[0])
    return {"reset": resets, "init": inits, "step": execs}


def ours(settings: Settings, episodes: int, steps: int, pool: int) -> dict[str, list[float]]:
    """ShellEnv resets (cold or from a warm pool) and steps through the persistent shell."""
    task = parse_shell_task(TASK, file="bench", number=0, index="bench-00000", scripts_dir=ROOT)
    spares = get_pool(pool, settings.output_cap_bytes)
    limits = docker.Limits.from_settings(settings)
    resets, steps_s = [], []
    for _ in range(episodes):
        if pool:
            spares.warm(settings.os_env_image, limits)
            deadline = time.monotonic() + 30
            while spares.ready(settings.os_env_image, limits) < pool and time.monotonic() < deadline:
                time.sleep(0.05)
        env = ShellEnv(task, settings)
        try:
            resets.append(seconds(env.reset))
            for _ in range(steps // episodes or 1):
                action = f"Act: bash\n```bash\n{COMMAND}\n```"
                steps_s.append(seconds(lambda env=env, action=action: env.step(action)))
                env.turn = 0  # keep under the round limit: only latency is measured here
        finally:
            env.close()
    spares.close()
    return {"reset": resets, "step": steps_s}


def main() -> int:
    """Measure every row, print the table and the target ratios."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--pool", type=int, default=4)
    add_out(parser, "shell_env")
    args = parser.parse_args()
    settings = Settings(pool_size=0)
    image = settings.os_env_image
    docker_cli("image", "inspect", image)
    base = baseline(image, args.episodes, args.steps)
    cold = ours(settings, args.episodes, args.steps, 0)
    warm = ours(settings.model_copy(update={"pool_size": args.pool}), args.episodes, args.steps, args.pool)
    rows = [
        ("baseline: docker run + exec init", base["reset"]),
        ("baseline: exec init alone", base["init"]),
        ("cold reset (no pool)", cold["reset"]),
        (f"warm reset (pool {args.pool})", warm["reset"]),
        ("baseline: docker exec per command", base["step"]),
        ("step (persistent shell)", warm["step"]),
    ]
    lines = ["| measurement | n | p50 ms | p95 ms |", "|---|---:|---:|---:|"]
    lines += [f"| {name} | {len(v)} | {percentile(v, 50):.1f} | {percentile(v, 95):.1f} |" for name, v in rows]
    warm_over_init = percentile(warm["reset"], 50) - percentile(base["init"], 50)
    step_ratio = percentile(warm["step"], 50) / percentile(base["step"], 50)
    lines += [
        "",
        f"- warm reset p50 minus init p50: {warm_over_init:.1f} ms (target <= 150 ms)",
        f"- step p50 / docker exec p50: {step_ratio:.2f} (target <= 1.3)",
        f"- cold reset p50 / baseline reset p50: {percentile(cold['reset'], 50) / percentile(base['reset'], 50):.2f}",
    ]
    report("\n".join(lines), args.out)
    return 0 if warm_over_init <= 150 and step_ratio <= 1.3 else 1


if __name__ == "__main__":
    sys.exit(main())
