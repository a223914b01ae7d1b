"""ShellEnv: one container per episode, an interactive bash, AgentBench's protocol and grading."""

from __future__ import annotations

import time
import uuid

from loraloop.broker import is_redis
from loraloop.envs.base import ResetInfo, StepInfo, StepResult
from loraloop.envs.shell import docker
from loraloop.envs.shell.evaluate import expected_output, failure_cause, grade, run_script
from loraloop.envs.shell.pool import get_pool
from loraloop.envs.shell.protocol import (
    FORMAT_ERROR,
    INSTRUCTIONS,
    ONE_SHOT,
    ROUND_LIMIT,
    format_output,
    parse_action,
    task_prompt,
)
from loraloop.envs.shell.session import ShellSession
from loraloop.envs.shell.tools import TOOL_INSTRUCTIONS, TOOL_ONE_SHOT, parse_tool_call
from loraloop.errors import EnvironmentFailure
from loraloop.settings import Settings, get_settings
from loraloop.tasks.shell.format import ShellTask

PROTOCOLS = {"text": (INSTRUCTIONS, ONE_SHOT), "tools": (TOOL_INSTRUCTIONS, TOOL_ONE_SHOT)}
TOOL_FORMAT_ERROR = "Your reply has no valid tool call: call bash_action, answer_action or finish_action"


class ShellEnv:
    """An AgentBench OS-interaction episode in a fresh, limited, network-less container."""

    def __init__(
        self,
        task: ShellTask,
        settings: Settings | None = None,
        *,
        max_rounds: int = ROUND_LIMIT,
        episode_id: str | None = None,
        shared: bool = False,
        protocol: str = "text",
    ) -> None:
        self.task = task
        self.settings = settings or get_settings()
        self.max_rounds = max_rounds
        self.episode_id = episode_id or uuid.uuid4().hex
        self.shared = shared  # the shell's state is saved after each command so other processes can go on
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {sorted(PROTOCOLS)}, got {protocol!r}")
        self.protocol = protocol
        self.instructions, self.examples = PROTOCOLS[protocol]
        self.prompt_style = "chat"  # the model sees the whole dialogue (kinds/prompts.py)
        self.stop = ["The output of the OS"] if protocol == "text" else None  # the model must not play the OS
        self.container: str | None = None
        self.session: ShellSession | None = None
        self.turn = 0
        self.done = False
        self.seed: int | None = None  # reset's, for the task's scripts
        self._expected: str | None = None

    @classmethod
    def attach(
        cls,
        task: ShellTask,
        settings: Settings,
        *,
        episode_id: str,
        container: str,
        turn: int,
        expected: str | None,
        max_rounds: int = ROUND_LIMIT,
        protocol: str = "text",
        seed: int | None = None,
    ) -> ShellEnv:
        """Go on with a shared episode another process started: a new shell restores the saved state.

        The keyword arguments are what `handle()` returned in that process.
        """
        env = cls(task, settings, max_rounds=max_rounds, episode_id=episode_id, shared=True, protocol=protocol)
        env.container, env.turn, env._expected, env.seed = container, turn, expected, seed
        env.session = env._new_session()
        env.session.restore()
        return env

    def handle(self) -> dict:
        """What another process needs to `attach` to this episode (plain JSON)."""
        return {
            "episode_id": self.episode_id,
            "container": self.container,
            "turn": self.turn,
            "expected": self._expected,
            "max_rounds": self.max_rounds,
            "protocol": self.protocol,
            "seed": self.seed,
        }

    @property
    def expected(self) -> str | None:
        """The expected output computed at reset (None for match-only tasks)."""
        return self._expected

    @property
    def live_container(self) -> str:
        """The episode's container; an EnvironmentFailure when it has none (not reset, or closed)."""
        if self.container is None:
            raise EnvironmentFailure(f"episode {self.episode_id} has no container (reset first)")
        return self.container

    def _new_session(self) -> ShellSession:
        return ShellSession(self.live_container, output_cap=self.settings.output_cap_bytes, save_state=self.shared)

    @property
    def outlives_process(self) -> bool:
        """True for a shared episode whose state is in Redis (a Task Server with a broker): any replica goes on with
        it after this process stops, so its container must not be reaped with this process."""
        return self.shared and is_redis(self.settings.broker_url)

    def image(self) -> str:
        """The image this task asks for: create.image, else create.local mapped to our images."""
        if self.task.image:
            return self.task.image
        if self.task.local in (None, "default"):
            return self.settings.os_env_image
        return f"loraloop/os-env-{self.task.local}:latest"

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, ResetInfo]:
        """Take a fresh container with its shell open (as AgentBench opens it before init), run init
        and start, compute expected values; return the task prompt and the expected answer.

        `seed` reaches the task's scripts (init, example, checks) as $LORALOOP_SEED; `options` changes nothing
        here and is taken for the contract's sake.
        """
        self.close()
        self.turn, self.done, self.seed = 0, False, seed
        pool = get_pool(self.settings.pool_size, self.settings.output_cap_bytes)
        self.container, self.session = pool.acquire(
            self.image(),
            docker.Limits.from_settings(self.settings, network=self.task.network or "none"),
            labels={"episode": self.episode_id, "task": self.task.index},
            owner=docker.shared_owner() if self.outlives_process else None,
        )
        self.session.save_state = self.shared
        try:
            for i, script in enumerate(self.task.init):
                try:
                    result = run_script(
                        self.container, script, self.task, timeout=self.settings.init_timeout_s, seed=seed
                    )
                except EnvironmentFailure as exc:  # `docker exec timed out after N s`
                    raise EnvironmentFailure(
                        f"task {self.task.index}: init script #{i}: {exc} (LORALOOP_INIT_TIMEOUT_S)"
                    ) from exc
                if result.returncode != 0:
                    raise EnvironmentFailure(
                        f"task {self.task.index}: init script #{i} failed with exit {result.returncode}: "
                        f"{failure_cause(result)}"
                    )
            if self.task.start:  # on the shell's stdin, as AgentBench: `su - jack` takes the shell over
                self.session.start(self.task.start, timeout=self.settings.command_timeout_s)
                time.sleep(0.5)  # let a background process write its first lines
            self._expected = expected_output(self.container, self.task, seed)
        except BaseException:
            self.close()
            raise
        return task_prompt(self.task.description), ResetInfo(expected=self._expected, seed=seed)

    def step(self, action: str) -> StepResult:
        """Apply one model turn: run its bash command, or grade its answer/finish."""
        if self.done or self.session is None:
            raise EnvironmentFailure(f"episode {self.episode_id} is not running (reset first)")
        self.turn += 1
        parsed = parse_tool_call(action) or parse_action(action)
        info = StepInfo(self.turn, parsed.kind)
        if parsed.kind in ("answer", "finish"):
            answer = parsed.content if parsed.kind == "answer" else None
            success = grade(self.live_container, self.task, answer, self._expected, self.seed)
            self.done = True
            return StepResult(None, 1.0 if success else 0.0, True, False, info.end("completed", success, answer))
        if parsed.kind == "invalid":
            observation = FORMAT_ERROR if self.protocol == "text" else f"{TOOL_FORMAT_ERROR} ({parsed.error})"
            info.error = parsed.error
        else:
            result = self.session.run(parsed.content, timeout=self.settings.command_timeout_s)
            observation = format_output(result.output)
            if result.timed_out:
                observation += f"\n[command killed after {self.settings.command_timeout_s:.0f} s]"
                info.error = "timeout"
            if not self.session.alive:
                info.error = "shell exited"
                self.session = self._new_session()
                if self.shared:
                    self.session.restore()
            info.exit_code = result.exit_code
        if self.turn >= self.max_rounds:
            self.done = True
            return StepResult(observation, 0.0, False, True, info.end("round_limit", False))
        return StepResult(observation, 0.0, False, False, info)

    def detach(self) -> None:
        """Stop this process's shell but leave the container (and a shared episode) running."""
        if self.session is not None:
            self.session.close()
            self.session = None

    def close(self) -> None:
        """Stop the shell and remove the container."""
        self.detach()
        if self.container is not None:
            docker.remove(self.container)
            self.container = None

    def __enter__(self) -> ShellEnv:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
