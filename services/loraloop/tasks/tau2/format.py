"""tau2-bench tasks as loraloop tasks: one tau2 task object of one domain, as a snapshot holds it.

The task object is tau2's own JSON (`id`, `user_scenario`, `initial_state`, `evaluation_criteria`, ...);
the snapshot adds the domain, the split and whether episodes run in solo mode. Reading a registry checks
the fields loraloop uses; tau2's own model validates the whole object when an episode starts (and when a
snapshot is written), so listing tasks does not import tau2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from loraloop.errors import TaskFormatError
from loraloop.tasks.base import TaskContext
from loraloop.tasks.tau2.package import DOMAINS


@dataclass(frozen=True)
class Tau2Task:
    """A tau2 task: its registry index (`<domain>.<id>`), tau2's task object and how its episodes run."""

    index: str
    id: str
    domain: str
    raw: dict = field(compare=False, repr=False)
    split: str = ""
    solo: bool = False  # no user simulator: the agent works from the task's ticket alone
    source: str = ""
    env = "tau2"

    @property
    def category(self) -> str:
        """The domain: `--subset airline` selects one domain."""
        return self.domain

    @property
    def labels(self) -> tuple[str, ...]:
        """Subset names besides split and domain: `solo`, and what the reward is computed from (`db`, ...)."""
        basis = self._criteria("reward_basis")
        return ("solo",) * self.solo + tuple(str(b).lower() for b in basis)

    @property
    def short_index(self) -> str:
        """tau2's own task id (AReaL's tau2 dataset rows name tasks by it)."""
        return self.id

    @property
    def description(self) -> str:
        """What the task is about: its stated purpose, else the user's instructions (the agent sees neither)."""
        about = self.raw.get("description") or {}
        scenario = self.raw.get("user_scenario") or {}
        instructions = scenario.get("instructions") if isinstance(scenario, dict) else None
        return str(
            about.get("purpose")
            or (instructions if isinstance(instructions, str) else "")
            or self.raw.get("ticket")
            or self.id
        )

    @property
    def actions(self) -> list[dict]:
        """The reference tool calls the agent makes in tau2's evaluation criteria, in order (the teacher's script). In
        solo mode there is no user, and the agent's tools include the user's (telecom's phone), so it makes the user's
        calls too."""
        makers = ("assistant", "user") if self.solo else ("assistant",)
        return [a for a in self._criteria("actions") if a.get("requestor", "assistant") in makers]

    @property
    def user_actions(self) -> list[dict]:
        """The reference calls the user makes on their own tools (telecom's phone), with a user simulator: the
        agent can only ask for them."""
        return [] if self.solo else [a for a in self._criteria("actions") if a.get("requestor") == "user"]

    def _criteria(self, field: str) -> list:
        """One list of tau2's evaluation criteria (empty where the task has none)."""
        return (self.raw.get("evaluation_criteria") or {}).get(field) or []

    @property
    def communicate(self) -> list[str]:
        """What the agent must tell the user (tau2's `communicate_info`)."""
        return [str(info) for info in self._criteria("communicate_info")]

    @cached_property
    def tau2_task(self):
        """tau2's Task model of the object, validated by tau2 (once); errors name the task and field."""
        from pydantic import ValidationError

        from loraloop.tasks.tau2.package import tau2_registry

        tau2_registry()
        from tau2.data_model.tasks import Task

        try:
            return Task.model_validate(self.raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise TaskFormatError(
                f"{self.source}: task {self.id!r}: field '{'.'.join(map(str, first['loc']))}' {first['msg']}"
            ) from exc


def owns(raw: Any) -> bool:
    """True for a JSON object shaped like a tau2 task (an id and a user scenario)."""
    return isinstance(raw, dict) and "user_scenario" in raw and "id" in raw


def parse_tau2_task(raw: Any, *, file: str, number: int, domain: str, split: str = "", solo: bool = False) -> Tau2Task:
    """Check one tau2 task object of `domain` and return it as a Tau2Task; errors name file, task and field."""
    where = f"{file}: task {number}"
    if domain not in DOMAINS:
        raise TaskFormatError(f"{file}: field 'domain' must be one of {', '.join(DOMAINS)}, got {domain!r}")
    if not isinstance(raw, dict):
        raise TaskFormatError(f"{where}: must be a JSON object, got {type(raw).__name__}")
    if not isinstance(raw.get("id"), str) or not raw["id"]:
        raise TaskFormatError(f"{where}: field 'id' must be a non-empty string")
    where = f"{file}: task {raw['id']!r}"
    if not isinstance(raw.get("user_scenario"), dict):
        raise TaskFormatError(f"{where}: field 'user_scenario' must be an object")
    criteria = raw.get("evaluation_criteria")
    if criteria is not None and not isinstance(criteria, dict):
        raise TaskFormatError(f"{where}: field 'evaluation_criteria' must be an object")
    actions = (criteria or {}).get("actions") or []
    named = isinstance(actions, list) and all(isinstance(a, dict) and isinstance(a.get("name"), str) for a in actions)
    if not named:
        raise TaskFormatError(f"{where}: field 'evaluation_criteria.actions' must be a list of objects with a 'name'")
    if solo and not raw.get("ticket"):
        raise TaskFormatError(f"{where}: field 'ticket' is required in solo mode (the agent works from it)")
    return Tau2Task(
        index=f"{domain}.{raw['id']}",
        id=raw["id"],
        domain=domain,
        raw=raw,
        split=split,
        solo=solo,
        source=f"{file}#{number}",
    )


def parse_task(raw: Any, ctx: TaskContext) -> Tau2Task:
    """The tau2 kind's parser for a task file listed in a registry.yaml: each object names its `domain`."""
    domain = raw.get("domain") if isinstance(raw, dict) else None
    if domain is None:
        raise TaskFormatError(
            f"{ctx.file}: task {ctx.number}: field 'domain' is missing (tau2 tasks outside a "
            f"snapshot name their domain; `loraloop tasks snapshot --source tau2` writes one)"
        )
    return parse_tau2_task(
        raw, file=ctx.file, number=ctx.number, domain=str(domain), split=ctx.split, solo=bool(raw.get("solo", False))
    )
