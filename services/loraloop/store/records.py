"""The typed trajectory records every producer writes: EpisodeStart, Step…, EpisodeEnd.

One episode is one JSONL object in the store, these three record types in order. Every record
carries `schema_version`, `run_id`, `seed` and `prompt_style`, so a record read alone still says
which run made it and how its prompt was laid out. Step records have room for what the RL loop
needs from the model server (prompt and completion token ids, sampling logprobs, the adapter and
the sampling parameters); they stay empty for scripted policies and old episodes.

Readers accept episodes written before these types existed (schema_version 1): every field they
lack takes its default, and fields these types do not name are kept as they are. Writers may not add such
fields: `store/trajectories.stamp`, which every writer calls, refuses a record with an undeclared field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

SCHEMA_VERSION = 3  # 3: HALO's step fields nested in `Step.halo` (2 wrote them flat on the step)
# The kind of an episode written before records named their kind: those were all shell episodes. A constant of
# the records' own, not the registry's default for task objects no kind claims (kinds/registry.DEFAULT_KIND).
LEGACY_KIND = "shell"
# `events` of a start or step record: what an environment did beyond its observation, one object each with a
# `type` (tau2: `tool_result`, `user_turn` (a user simulator's model call, apart from the agent's), `evaluation`).
LEGACY_SCHEMA_VERSION = 1  # untyped episodes, written before schema_version existed


class Adapter(BaseModel):
    """The LoRA adapter a reply was sampled with: its store name, version ('v3'; served as `<name>-v3`) and
    digest (the version's weights_sha256)."""

    name: str
    version: str | None = None
    digest: str | None = None


class Record(BaseModel):
    """What every record carries."""

    model_config = ConfigDict(extra="allow")

    type: str
    schema_version: int = LEGACY_SCHEMA_VERSION
    timestamp: float = 0.0
    run_id: str | None = None
    seed: int | None = None
    prompt_style: str = "chat"


class Provenance(BaseModel):
    """Who played an episode and how, as its driver knows before it starts: seeds, registry, policy and model,
    sampling, adapter, round limit and protocol, the Task Server's or the gateway's ids, HALO's settings. A driver
    builds one (undeclared fields refused, naming them) and the session writes it into the start record whole."""

    model_config = ConfigDict(extra="forbid")

    task_seed: int | None = None
    task_registry: str | None = None
    policy: str = ""
    protocol: str = "text"
    worker_model: str | None = None
    worker_temperature: float | None = None
    max_steps: int | None = None
    model_url: str | None = None
    adapter: Adapter | None = None
    sampling: dict[str, Any] | None = None
    session_id: str | None = None  # the gateway's session (serve/gateway) an outside agent's episode was recorded in
    # An episode a Task Server client played (taskserver/, AReaL's API): its episode id, the sample id the client
    # asked for, and the start's config as the Task Server kept it (protocol, the kind's own settings).
    episode_id: str | None = None
    sample_id: str | int | None = None  # a task index, or its position (AReaL sends either)
    config: dict[str, Any] | None = None
    # The HALO orchestrator's settings (agents/; all off for a plain worker): the manager model, the Verified Action
    # Cache, macros and recovery policies.
    manager_model: str | None = None
    manager_url: str | None = None
    use_manager: bool = False
    use_cache: bool = False
    use_macros: bool = False
    use_recovery: bool = False


class EpisodeStart(Provenance, Record):
    """The episode's start: its task, run and attempt, its provenance (above), the prompt's fixed parts and what
    reset computed. Written once, whole, when the reset has answered (or failed: then without its parts)."""

    model_config = ConfigDict(extra="allow")  # a record: old episodes' undeclared fields are read (see Record)

    type: Literal["episode_start"] = "episode_start"
    task_id: str
    mode: str = ""
    attempt_idx: int = 0
    env: str = LEGACY_KIND  # episodes written before records named their kind are shell episodes
    system_prompt: str = ""
    examples: list[dict[str, Any]] = Field(default_factory=list)
    first_observation: str | None = None
    expected: str | None = None  # what the task computed at reset (the example's output)
    split: str = ""
    category: str = ""
    goal: str = ""
    events: list[dict[str, Any]] | None = None  # what the env did at reset besides the observation (note above)


class HaloStep(BaseModel):
    """The HALO orchestrator's part in a step (agents/): action_source says who chose the action (worker, manager,
    cache, macro, recovery, scripted…); these say why."""

    manager_called: bool = False
    gate: str | None = None  # the manager gate that fired (warm_start, repeated_error, loop, error_streak, high_stakes)
    manager_reason: str | None = None
    manager_error: str | None = None  # the manager could not be reached: the worker went on alone
    cache_hit: bool = False
    cache_event: str | None = None  # hit, miss, stale (its target is gone), repeat
    macro: str | None = None  # the macro call this primitive action was expanded from
    recovery: str | None = None  # the trigger of a recovery action (no_progress, repeated_error, loop)


HALO_FIELDS = frozenset(HaloStep.model_fields)
NO_HALO = HaloStep()  # what a step without HALO's part reads as: `(step.halo or NO_HALO).gate`


class Step(Record):
    """One turn: what the agent saw, what it replied, what the environment made of it."""

    type: Literal["step"] = "step"
    step_idx: int
    observation: str = ""
    obs_hash: str | None = None
    obs_summary: str | None = None
    raw_output: str = ""
    action: str | None = None  # the action's kind (bash, answer, click, invalid…)
    action_text: str | None = None  # the canonical action string, where the env gives one
    action_source: str = ""
    model: str | None = None
    last_action_error: str | None = None
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    done: bool = False
    model_latency_ms: float | None = None
    elapsed_ms: float | None = None
    completion_tokens: int = 0
    url: str | None = None
    screenshot: str | None = None
    next_observation: str | None = None
    events: list[dict[str, Any]] | None = None  # what the env did in the step besides the observation (note above)
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    adapter: Adapter | None = None
    sampling: dict[str, Any] | None = None
    # An outside agent's call recorded by the gateway (serve/gateway): the chat it sent, as it sent it (the prompt
    # exports train on), and the completion's id, which a reward can name.
    messages: list[dict[str, Any]] | None = None
    interaction_id: str | None = None
    finish_reason: str | None = None  # why the model stopped (stop, length, tool_calls)
    tool_calls: list[dict[str, Any]] | None = None  # the completion's tool calls, as the server returned them
    halo: HaloStep | None = None  # the HALO orchestrator's part in the step; None where it took none
    progress_score: float | None = None  # the kind's progress score after the step (0..1; the web's milestones)

    @model_validator(mode="before")
    @classmethod
    def _nest_halo(cls, data: Any) -> Any:
        """HALO's fields given flat (a writer's keyword arguments, or a step of schema_version 2, which stored them
        on the step) go into `halo`; a step where all of them are at their defaults has none."""
        if not isinstance(data, dict) or not HALO_FIELDS.intersection(data):
            return data
        data = dict(data)
        flat = {name: data.pop(name) for name in HALO_FIELDS if name in data}
        if data.get("halo") is None and any(flat.values()):
            data["halo"] = flat
        return data


class EpisodeOutcome(BaseModel):
    """How an episode ended, as its driver knows it while it runs: what EpisodeEnd records of it (every driver,
    the rollout worker, the Task Server, online GRPO and the gateway, sets these fields, never a dict)."""

    success: bool = False
    reward: float = 0.0
    status: str = "error"  # until the episode ends by itself, or its driver says how it stopped
    answer: str | None = None


class EpisodeEnd(Record):
    """The outcome: success, reward, status, answer, length, time and errors."""

    type: Literal["episode_end"] = "episode_end"
    success: bool = False
    reward: float = 0.0
    status: str = ""
    answer: str | None = None
    total_steps: int = 0
    wall_time_sec: float = 0.0
    error_count: int = 0
    error: str | None = None
    reason: str | None = None  # why a skipped episode was not played
    expected: str | None = None
    max_progress_score: float | None = None
    final_progress_score: float | None = None
    manager_calls: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    cache_skipped: int = 0  # entries found but not used: their target was gone, or the action would repeat
    recoveries: int = 0


AnyRecord = Annotated[EpisodeStart | Step | EpisodeEnd, Field(discriminator="type")]
RECORDS = TypeAdapter(list[AnyRecord])
RECORD = TypeAdapter(AnyRecord)


def dump(record: Record) -> bytes:
    """One record as a JSON line, every field written (None as null), so jq and pandas see one shape."""
    return record.model_dump_json().encode() + b"\n"
