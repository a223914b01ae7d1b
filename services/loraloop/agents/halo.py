"""HALO's orchestrator: who chooses each action of an episode, in a fixed order, and why.

Before every step it asks, in turn:
1. recovery (agents/recovery.py): is the episode stuck (no progress, the same error twice, a loop)? Then the
   kind's recovery action, recorded with `action_source: recovery` and the trigger;
2. the manager (agents/manager.py): is this one of the first `warm_start_steps` steps, or does a gate fire
   (agents/gates.py: the same error twice, a loop, an error streak, a high-stakes page)? Then the manager's
   decision (`action_source: manager`, `manager_called`, `gate`, `manager_reason`); a manager that does not
   answer leaves the step to the others and the step records the outage (`manager_error`), and so does a reply
   that holds no action (its reason is recorded);
3. a macro in progress (agents/macros.py): its next primitive action (`action_source: macro`, `macro`);
4. the Verified Action Cache (agents/vac.py): an action verified in this state (`action_source: cache`);
5. the worker. An action it proposes that the kind calls destructive (the shell's `rm -r`) goes to the manager
   first (gate `high_stakes`).
A macro call written by the worker or the manager starts the macro; a bad call is an error observation for
the agent (EpisodeSession.note), never a crash. After each step the cache learns whether the action worked.

Gates and triggers read the steps since the last intervention (a manager's decision or a recovery), so one
situation is handled once; a trigger that both recovery and the manager know is handled by recovery first,
and the manager is asked on the next step.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeGuard

from loraloop.agents import gates, recovery
from loraloop.agents.manager import Decision, Manager, note
from loraloop.agents.policy import Policy, Reply
from loraloop.envs.base import StepInfo
from loraloop.errors import ServiceUnavailable
from loraloop.kinds.spec import EnvKind
from loraloop.store.records import NO_HALO, HaloStep

if TYPE_CHECKING:
    from loraloop.agents.macros import Macro
    from loraloop.envs.base import StepResult
    from loraloop.store.trajectories import EpisodeRecorder


class Session(Protocol):
    """What HALO needs of the episode it plays: rollout.session.EpisodeSession, which sits above agents/."""

    observation: str
    steps: int
    recorder: EpisodeRecorder

    def prompt(self, reserve: int = 0) -> list[dict[str, str]]: ...

    def act(
        self, text: str, *, source: str, reply: Reply | None = None, halo: HaloStep | None = None
    ) -> StepResult: ...

    def note(
        self, text: str, error: str, *, source: str, reply: Reply | None = None, halo: HaloStep | None = None
    ) -> None: ...


RECENT_ACTIONS = 5  # actions the cache compares a cached one with (it must not repeat the last)


@dataclass
class Choice:
    """The action chosen for a step, who chose it, the model reply that did (None: the cache, recovery) and HALO's
    part in the step; `error` when the reply could not become an action (a macro call with a missing argument): the
    env never sees it."""

    text: str
    source: str
    reply: Reply | None = None
    halo: HaloStep = field(default_factory=HaloStep)
    error: str | None = None

    @property
    def step_halo(self) -> HaloStep | None:
        """HALO's part as the step records it: None when it took none."""
        return None if self.halo == NO_HALO else self.halo


@dataclass
class Tuning:
    """The orchestrator's knobs (experiments.yaml: manager.warm_start_steps and error_streak, recovery_patience)."""

    warm_start_steps: int = 1
    error_streak: int = 3
    recovery_patience: int = 3
    use_recovery: bool = False


class HaloAgent:
    """Plays one episode's steps through an EpisodeSession: recovery, manager gate, macro, cache, worker.

    `kind` is the task's EnvKind: what HALO does differently by kind (cache keys, recovery moves, gates, macros)
    is the kind's AgentFacet, so this class names no kind.
    `cache` is an agents.vac ActionCache (None: off) and `vac` the agents.vac module (its state keys and its
    rule for an action that worked); `macros` is the agents.macros module (None: off). The modules are passed
    in so that each rule has one home.
    """

    def __init__(
        self,
        worker: Policy,
        kind: EnvKind,
        task_id: str,
        *,
        manager: Manager | None = None,
        cache: Any = None,
        vac: Any = None,
        macros: Any = None,
        tuning: Tuning | None = None,
    ) -> None:
        self.worker, self.kind, self.task_id = worker, kind, task_id
        self.manager, self.cache, self.vac, self.macros = manager, cache, vac, macros
        self.tuning = tuning or Tuning()
        self.canonical = kind.envs.canonical_action
        self.macro: Macro | None = None  # the macro in progress
        self.mark = 0  # steps before this index are before the last intervention
        self.pending_gate: str | None = None  # a trigger recovery handled, for the manager on the next step
        self.consulted: set[str] = set()  # high-stakes pages the manager has decided on
        self.key: str | None = None  # the state key of the step being taken

    def step(self, session: Session) -> None:
        """Choose the next action, take it through the session (recorded) and learn from its result."""
        before = session.observation
        self.key = self.state_key(session) if self.cache is not None else None
        choice = self.choose(session)
        if choice.error is not None:
            session.note(choice.text, choice.error, source=choice.source, reply=choice.reply, halo=choice.step_halo)
            return
        result = session.act(choice.text, source=choice.source, reply=choice.reply, halo=choice.step_halo)
        answered = choice.halo.manager_called and not choice.halo.manager_error
        if choice.source in ("manager", "recovery") or answered:  # an intervention: gates start afresh
            self.mark = len(self.steps(session))
        self.learn(choice, result.info, before, result.observation)

    @staticmethod
    def steps(session: Session) -> list:
        """The session's Step records so far."""
        return [r for r in session.recorder.records if r.type == "step"]

    def recent(self, session: Session) -> list:
        """The steps since the last intervention: what gates and triggers judge."""
        return self.steps(session)[self.mark :]

    def choose(self, session: Session) -> Choice:
        """The next action and who chose it, in the orchestrator's order (see the module)."""
        steps = self.recent(session)
        if self.tuning.use_recovery:
            trigger = recovery.trigger(steps, self.tuning.recovery_patience, self.canonical)
            action = trigger and recovery.recovery_action(self.kind, trigger, steps)
            if action:
                self.macro = None
                if self.manager is not None and trigger in ("repeated_error", "loop"):
                    self.pending_gate = trigger
                return Choice(action, "recovery", halo=HaloStep(recovery=trigger))
        asked = HaloStep()
        gate = self.gate(session, steps)
        if gate is not None:
            decision, asked = self.ask(session, gate)
            if decision is not None and self.usable(decision.action):
                self.macro = None
                return self.expand(session, decision.action, "manager", asked, decision.reply.unsampled())
        if self.macro is not None:
            choice = self.macro_step(session, asked)
            if choice is not None:
                return choice
        halo = asked
        if self.cache is not None:
            lookup = self.cache.lookup(
                self.key,
                kind=self.kind,
                observation=session.observation,
                recent_actions=[s.raw_output for s in self.steps(session)[-RECENT_ACTIONS:]],
            )
            halo = halo.model_copy(update={"cache_event": lookup.event})
            if lookup.action is not None:
                return Choice(lookup.action, "cache", halo=halo.model_copy(update={"cache_hit": True}))
        reply = self.worker.act(session.prompt())
        unasked = asked.gate is None
        if self.manager is not None and unasked and self.kind.agent.destructive(self.canonical(reply.text) or ""):
            decision, asked = self.ask(session, "high_stakes", proposal=reply.text)
            halo = halo.model_copy(update=asked.model_dump(exclude_defaults=True))
            if decision is not None and self.usable(decision.action):
                return self.expand(session, decision.action, "manager", halo, decision.reply.unsampled())
        return self.expand(session, reply.text, reply.source, halo, reply)

    def gate(self, session: Session, steps: list) -> str | None:
        """The manager gate that fires before this step (None: none, or no manager)."""
        if self.manager is None:
            return None
        if self.pending_gate is not None:
            gate, self.pending_gate = self.pending_gate, None
            return gate
        if session.steps < self.tuning.warm_start_steps and self.macro is None:
            return "warm_start"
        found = gates.trouble(steps, self.canonical, self.tuning.error_streak)
        if found is not None:
            return found
        url = self.kind.agent.high_stakes(session.observation)
        if url and url not in self.consulted:
            self.consulted.add(url)
            return "high_stakes"
        return None

    def ask(self, session: Session, gate: str, proposal: str | None = None) -> tuple[Decision | None, HaloStep]:
        """The manager's decision for `gate` and what the step records of it; an outage is recorded, not raised."""
        manager = self.manager
        if manager is None:  # gate() fires only with a manager, and a destructive command asks only one
            return None, HaloStep()
        called = manager.down is None
        try:
            decision = manager.decide(session.prompt(reserve=len(note(gate, proposal))), gate, proposal)
        except ServiceUnavailable as exc:
            return None, HaloStep(gate=gate, manager_called=called, manager_error=str(exc))
        return decision, HaloStep(gate=gate, manager_called=True, manager_reason=decision.reason)

    def usable(self, text: str | None) -> TypeGuard[str]:
        """Whether a manager's reply holds an action the env or a macro takes; when it holds none, the others
        choose the step (its reason is still recorded) rather than spend a step on an invalid action."""
        if not text:
            return False
        if self.canonical(text) is not None:
            return True
        try:
            return self.macros is not None and self.macros.parse_macro(text, self.kind) is not None
        except self.macros.MacroError:
            return False

    def macro_step(self, session: Session, asked: HaloStep, reply: Reply | None = None) -> Choice | None:
        """The macro in progress's next primitive action (its first carries the `reply` that called the macro); None
        when it is done (the others choose)."""
        macro = self.macro
        if macro is None:
            return None
        halo = asked.model_copy(update={"macro": macro.call})
        try:
            action = macro.next_action(session.observation)
        except self.macros.MacroError as exc:
            self.macro = None
            return Choice(macro.call, "macro", reply, halo, error=str(exc))  # it names the macro
        if action is None:
            self.macro = None
            return None
        return Choice(action, "macro", reply, halo)

    def expand(self, session: Session, text: str, source: str, halo: HaloStep, reply: Reply | None) -> Choice:
        """`text` as the step's action, or, when it calls a macro, the macro's first primitive action; `reply` is
        the model reply that wrote it."""
        if self.macros is None:
            return Choice(text, source, reply, halo)
        try:
            macro = self.macros.parse_macro(text, self.kind)
        except self.macros.MacroError as exc:
            return Choice(text, source, reply, halo, error=str(exc))
        if macro is None:
            return Choice(text, source, reply, halo)
        self.macro = macro
        return self.macro_step(session, halo, reply) or Choice(
            text,
            source,
            reply,
            halo.model_copy(update={"macro": macro.call}),
            error=f"{macro.name}: nothing to do on this page",
        )

    def state_key(self, session: Session) -> str:
        """The cache's key for the state the next action is taken in."""
        return self.vac.state_key(self.kind, self.task_id, session.observation)

    def learn(self, choice: Choice, info: StepInfo, before: str, after: str | None) -> None:
        """Tell the cache whether the step's action worked in the state it was taken in (recovery actions are
        not cached: they are the orchestrator's, not a solution)."""
        if self.cache is None or self.key is None or choice.source == "recovery":
            return
        if self.vac.action_worked(self.kind, info, before, after):
            self.cache.verified(self.key, choice.text)
        elif choice.source == "cache":
            self.cache.failed(self.key, choice.text)
