"""One episode from reset to the store, run the same way by every driver.

The rollout worker, the Task Server and the trainers each drive episodes differently (a policy
in a loop, HTTP calls spread over replicas, sampled completions), but they all go through an
`EpisodeSession`: `start()` resets the environment, `prompt()` builds the chat the policy sees
(kinds/prompts, the function the exports use too), `act(text)` takes one step, `finish()`
writes the episode to the store as typed records (store/records.py). So every stored episode has
the same fields, whoever produced it, and a session can be saved and resumed by another process
(`snapshot()`/`resume()`). Where the task's kind scores progress (its AgentFacet's `progress`: the web's
milestones, envs/web/progress.py), every step also gets the episode's score so far, and the end record its
maximum and final score, for every driver and policy.
"""

from __future__ import annotations

import time
from typing import Any

from loraloop.envs.base import Env, ResetInfo, StepInfo, StepResult
from loraloop.kinds.prompts import build_prompt
from loraloop.kinds.registry import env_kind
from loraloop.kinds.spec import Progress
from loraloop.logs import get_logger
from loraloop.replies import Reply
from loraloop.rollout.summary import EpisodeSummary
from loraloop.store.backends import Store
from loraloop.store.records import RECORDS, EpisodeEnd, EpisodeOutcome, EpisodeStart, HaloStep, Provenance, Step
from loraloop.store.trajectories import EpisodeRecorder, obs_hash
from loraloop.tasks.base import Task

OBS_SUMMARY_CHARS = 400
log = get_logger("loraloop.rollout")


class EpisodeSession:
    """One episode of `task` in `env`, recorded under trajectories/<mode>/<run_id>/<task>__attempt_<k>.jsonl.

    `provenance` (who plays it and how: policy, model, sampling, adapter, registry, round limit…) goes into the
    episode_start record, which `start()` writes whole once the reset has answered.
    """

    def __init__(
        self,
        store: Store,
        env: Env | None,
        task: Task,
        *,
        mode: str,
        run_id: str,
        attempt: int,
        seed: int | None = None,
        char_budget: int = 4000,
        provenance: Provenance | None = None,
    ) -> None:
        self.env, self.task = env, task
        self.prompt_style = env.prompt_style if env is not None else ""
        self.recorder = EpisodeRecorder(store, mode, run_id, task.index, attempt)
        self.store = store
        self.mode, self.run_id, self.attempt, self.seed = mode, run_id, attempt, seed
        self.char_budget = char_budget
        self.provenance = provenance or Provenance()
        self.first: str | None = None
        self.observation = ""
        self.expected: str | None = None
        self.turns: list[tuple[str, str]] = []
        self.steps = self.errors = 0
        self.done = False
        self.outcome = EpisodeOutcome()
        self.started = time.time()
        # each step's progress_score, where the kind scores progress; a session without an env (the gateway's, one
        # that can only finish) takes no step to score
        track = env_kind(task.env).agent.progress if env is not None else None
        self.progress: Progress | None = track(task) if track else None
        self._cut_warned = False  # the prompt's history was cut to its budget, and a warning said so

    @property
    def live_env(self) -> Env:
        """The environment; a session resumed without one (it expired or was cancelled) can only `finish`."""
        if self.env is None:
            raise AttributeError("this episode has no environment any more: it can only finish")
        return self.env

    @property
    def last_step(self) -> Step | None:
        """The step record `act` or `note` wrote last (None before the first step): what a driver logs and times."""
        last = self.recorder.records[-1] if self.recorder.records else None
        return last if isinstance(last, Step) else None

    @property
    def key(self) -> str:
        """The episode's store key (also its Celery task id and its id for resuming runs)."""
        return self.recorder.key

    def _common(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "seed": self.seed, "prompt_style": self.prompt_style}

    def start(self) -> str:
        """Reset the environment, record episode_start and return the first observation.

        The start record is built once, whole: from the task and the provenance, with what the reset returned.
        An episode whose reset fails still gets its start record (what was attempted, without the reset's part),
        and is stored by the driver's `finish(status="env_error", …)`. Either way the record is stamped with the
        time the session began, as the reset is part of the episode.
        """
        try:
            self.first, info = self.live_env.reset(seed=self.seed)
        except BaseException:
            self._record_start()
            raise
        self.observation, self.expected = self.first, info.expected
        self._record_start(self.first, info)
        if self.progress is not None:
            self.progress.start(self.first)
        return self.first

    def _record_start(self, first: str | None = None, reset: ResetInfo | None = None) -> EpisodeStart:
        """The start record, whole: the task, the session's place and provenance, and the reset's answer where
        there was one (`first` and `reset`: the first observation, the expected answer, the setup's events)."""
        task, env = self.task, self.env
        return self.recorder.add(
            EpisodeStart(
                **self._common(),
                **self.provenance.model_dump(),
                task_id=task.index,
                mode=self.mode,
                attempt_idx=self.attempt,
                env=task.env,
                system_prompt=env.instructions if env is not None else "",
                examples=env.examples if env is not None else [],
                split=task.split,
                category=task.category,
                goal=task.description,
                first_observation=first,
                expected=reset.expected if reset else None,
                events=reset.events if reset else None,
            ),
            at=self.started,
        )

    def prompt(self, reserve: int = 0) -> list[dict[str, str]]:
        """The chat the policy sees now: the env's prompt style over the first observation and past turns;
        `reserve` characters of the budget are kept for what a caller adds (the manager's note). When the
        whole history is past the budget, the prompt keeps the newest turns that fit, and the first time in
        an episode a warning says so (never silently: a short context is a result's cause)."""
        env = self.live_env
        budget = self.char_budget - reserve
        if not self._cut_warned:
            whole = (
                len(env.instructions)
                + sum(len(m["content"]) for m in env.examples)
                + len(self.first or "")
                + sum(len(a) + len(b) for a, b in self.turns)
            )
            if whole > budget:
                self._cut_warned = True
                log.warning(
                    "the prompt is cut to its budget: the oldest turns are left out",
                    fields={
                        "episode": self.key,
                        "history_chars": whole,
                        "budget_chars": budget,
                        "setting": "LORALOOP_PROMPT_CHAR_BUDGET",
                    },
                )
        return build_prompt(self.prompt_style, env.instructions, env.examples, self.first or "", self.turns, budget)

    def act(self, text: str, *, source: str, reply: Reply | None = None, halo: HaloStep | None = None) -> StepResult:
        """Take one step with the action `text` and record it: `source` says who chose it, `reply` is the model reply
        that did (its model, latency, tokens and what was sampled go into the step; None for a script or a client),
        `halo` the HALO orchestrator's part in the step (None where it took none)."""
        shown = getattr(self.env, "last_screenshot", None)  # the page the agent saw, where the env keeps one
        started = time.perf_counter()
        result = self.live_env.step(text)
        info = result.info
        error = info.error
        self.errors += bool(error)
        progress = self.progress and self.progress.update(result.observation, None, info.action, info)
        self.recorder.add(
            Step(
                **self._common(),
                step_idx=self.steps,
                observation=self.observation,
                obs_hash=obs_hash(self.observation),
                obs_summary=self.observation[:OBS_SUMMARY_CHARS],
                raw_output=text,
                action=info.action_kind,
                action_text=info.action,
                action_source=source,
                last_action_error=error,
                reward=result.reward,
                terminated=result.terminated,
                truncated=result.truncated,
                done=result.done,
                elapsed_ms=round((time.perf_counter() - started) * 1000, 1),
                url=info.url,
                screenshot=self._save_screenshot(shown),
                next_observation=result.observation,
                events=info.events,
                progress_score=progress,
                halo=halo,
                **replied(reply),
            )
        )
        if result.done:
            self.steps += 1
            self.done = True
            self.outcome = EpisodeOutcome(
                success=bool(info.success),
                reward=result.reward,
                status=info.status,
                answer=info.answer,
            )
        else:
            self._went_on(text, result.observation)
        return result

    def note(
        self, text: str, error: str, *, source: str, reply: Reply | None = None, halo: HaloStep | None = None
    ) -> None:
        """Record a reply the environment never saw, because it could not become an action (a macro call with a
        missing argument): the error, over the unchanged observation, is the agent's next one and the episode goes
        on. It counts against the episode's max_steps, so replies that never reach the env cannot go on forever."""
        observation = f"Your last reply could not be taken: {error}\n\n{self.observation}"  # the state is unchanged
        self.errors += 1
        limit = self.provenance.max_steps or 0
        cut = bool(limit) and self.steps + 1 >= limit
        self.recorder.add(
            Step(
                **self._common(),
                step_idx=self.steps,
                observation=self.observation,
                obs_hash=obs_hash(self.observation),
                obs_summary=self.observation[:OBS_SUMMARY_CHARS],
                raw_output=text,
                action="invalid",
                action_source=source,
                last_action_error=error,
                truncated=cut,
                done=cut,
                next_observation=observation,
                elapsed_ms=0.0,
                progress_score=self.progress and self.progress.score,
                halo=halo,
                **replied(reply),
            )
        )
        self._went_on(text, observation)
        if cut:
            self.done = True
            self.outcome = EpisodeOutcome(status="round_limit")

    def _went_on(self, text: str, observation: str | None) -> None:
        """Count a step the episode went on after: the turn joins the history, its observation is the next one's."""
        self.steps += 1
        self.turns.append((text, observation or ""))
        self.observation = observation or ""

    def _save_screenshot(self, png: bytes | None) -> str | None:
        """Store the page's PNG next to the trajectory (`<episode>/step_003.png`) and return its key."""
        if not png:
            return None
        shot = f"{self.key.removesuffix('.jsonl')}/step_{self.steps:03d}.png"
        self.store.put_bytes(shot, png)
        return shot

    def finish(self, status: str | None = None, error: str | None = None, reason: str | None = None) -> bool:
        """Record episode_end and write the episode; False when a copy was stored first (this one is dropped).

        `status` overrides the outcome for an episode that did not end by itself (cancelled,
        expired, interrupted, env_error, model_error, model_timeout, crash, skipped); `error` says what failed,
        `reason` why a skipped episode was not played.
        """
        if status is not None:
            self.outcome.status = status
        if not self.recorder.records:  # it ended before it started (a task the policy cannot play)
            self._record_start()
        scores = [
            r.progress_score for r in self.recorder.records if isinstance(r, Step) and r.progress_score is not None
        ]
        self.recorder.add(
            EpisodeEnd(
                **self._common(),
                **self.outcome.model_dump(),
                total_steps=self.steps,
                wall_time_sec=round(time.time() - self.started, 3),
                error_count=self.errors,
                error=error,
                reason=reason,
                expected=self.expected,
                max_progress_score=max(scores, default=None),
                final_progress_score=scores[-1] if scores else None,
                **orchestrator_counts(self.recorder.records),
            )
        )
        return self.recorder.flush()

    def summary(self) -> EpisodeSummary:
        """What a driver reports of the episode: key, task, attempt, steps and the outcome."""
        return EpisodeSummary(
            key=self.key, task_id=self.task.index, attempt=self.attempt, steps=self.steps, **self.outcome.model_dump()
        )

    def snapshot(self) -> dict[str, Any]:
        """A running session as plain JSON, for another process to `resume`: its records say everything
        (the env's own state lives in the env)."""
        return {
            "char_budget": self.char_budget,
            "records": [r.model_dump(mode="json", exclude_none=True) for r in self.recorder.records],
        }

    @classmethod
    def resume(cls, store: Store, env: Env | None, task: Task, snapshot: dict[str, Any]) -> EpisodeSession:
        """A running session saved by `snapshot()`, rebuilt from its records, going on with `env` (attached
        to the episode's environment); with `env` None it can only `finish` (it expired or was cancelled)."""
        start, *rest = RECORDS.validate_python(snapshot["records"])
        steps = [r for r in rest if isinstance(r, Step)]
        if not isinstance(start, EpisodeStart) or start.run_id is None or len(steps) != len(rest):
            raise ValueError("a session's snapshot is its episode_start record (with a run id), then its steps")
        session = cls(
            store,
            env,
            task,
            mode=start.mode,
            run_id=start.run_id,
            attempt=start.attempt_idx,
            seed=start.seed,
            char_budget=snapshot["char_budget"],
            provenance=Provenance.model_validate(start.model_dump(include=set(Provenance.model_fields))),
        )
        session.recorder.records = [start, *steps]
        session.prompt_style, session.started = start.prompt_style, start.timestamp
        session.first, session.observation = start.first_observation, start.first_observation or ""
        session.expected = start.expected
        if session.progress is not None:
            session.progress.start(start.first_observation or "")
        for step in steps:
            session.errors += bool(step.last_action_error)
            if session.progress is not None:
                info = StepInfo(step.step_idx + 1, step.action or "invalid", step.action_text, step.last_action_error)
                session.progress.update(step.next_observation, None, step.action_text, info)
            session._went_on(step.raw_output, step.next_observation)
        return session


def replied(reply: Reply | None) -> dict[str, Any]:
    """What a Step records of the model reply that chose its action: the model, its latency, its tokens and what
    was sampled (the RL loop's token ids, logprobs, sampling and adapter); nothing for a step no model chose."""
    if reply is None:
        return {}
    return {
        "model": reply.model,
        "model_latency_ms": round(reply.latency_ms, 1),
        "completion_tokens": reply.completion_tokens,
        "prompt_token_ids": reply.prompt_token_ids,
        "completion_token_ids": reply.completion_token_ids,
        "logprobs": reply.logprobs,
        "sampling": reply.sampling,
        "adapter": reply.adapter,
    }


def orchestrator_counts(records: list) -> dict[str, int]:
    """The HALO orchestrator's counters of an episode (EpisodeEnd), from its step records: manager calls,
    cache hits, misses and entries skipped (stale or repeat), recovery actions."""
    halo = [r.halo for r in records if r.type == "step" and r.halo is not None]
    events = [h.cache_event for h in halo]
    return {
        "manager_calls": sum(h.manager_called for h in halo),
        "cache_hits": events.count("hit"),
        "cache_misses": events.count("miss"),
        "cache_skipped": events.count("stale") + events.count("repeat"),
        "recoveries": sum(bool(h.recovery) for h in halo),
    }


def steps_taken(snapshot: dict[str, Any]) -> int:
    """How many steps a saved session has taken (its records less the start)."""
    return len(snapshot["records"]) - 1
