"""The Task Server's request and reply models (AReaL's TaskServerWorkflow shapes) and the error replies its routes
declare."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, StrictInt, StrictStr

from loraloop.http_guards import RequestBody

ERRORS: dict[int | str, dict[str, Any]] = {
    404: {"description": "unknown sample or episode"},
    400: {"description": "bad sample id or config, or a step or cancel after the end"},
    401: {"description": "missing or wrong bearer token (LORALOOP_TASK_SERVER_TOKEN)"},
    409: {"description": "the episode lives on another replica"},
    413: {"description": "the request body is over LORALOOP_API_MAX_BODY_BYTES"},
    429: {"description": "LORALOOP_API_MAX_IN_FLIGHT starts and steps are running: try again (Retry-After)"},
    503: {
        "description": "Redis (LORALOOP_BROKER_URL) or the store does not answer: try again (Retry-After); "
        "an episode that could not be stored stays open"
    },
    500: {
        "description": "the environment could not start (the message says how); a failure during an "
        "episode ends it instead: done, info.status env_error, info.error"
    },
}
MAX_ACTION_CHARS = 65536  # longer than any command or tool call an agent needs; more is refused (422)
EPISODE_ID = Field(max_length=128, description="the id start returned")


class StartRequest(RequestBody):
    """POST /api/episode/start."""

    sample_id: StrictInt | StrictStr = Field(description="a task's index string, or its position as an int")
    config: dict = Field(
        default_factory=dict,
        description="protocol: text | tools; the kind's own settings (tau2: "
        "econfig.user_llm, econfig.user_llm_base_url, "
        "econfig.solo_mode); kept with the episode",
    )


class Action(RequestBody):
    """An agent action: text in the task's protocol (a tool call travels as its JSON text)."""

    type: str = Field("text", max_length=32)
    content: str = Field(max_length=MAX_ACTION_CHARS)


class StepRequest(RequestBody):
    """POST /api/episode/step."""

    episode_id: str = EPISODE_ID
    action: Action


class CancelRequest(RequestBody):
    """POST /api/episode/cancel."""

    episode_id: str = EPISODE_ID


class Observation(BaseModel):
    """An observation: the whole opening chat (`messages`) or the next environment text (`text`)."""

    type: Literal["messages", "text"]
    content: str | list[dict[str, str]]


class EpisodeReply(BaseModel):
    """What start and step return (AReaL's shape): at the end the observation is null and info has the outcome."""

    episode_id: str
    observation: Observation | None
    reward: float
    done: bool
    info: dict[str, Any]


class Health(BaseModel):
    """GET /api/health."""

    status: str
    active_episodes: int
    task_name: str


class TaskInfo(BaseModel):
    """GET /api/task/info."""

    name: str
    num_samples: int
    max_episode_length: int
    observation_type: str
    action_type: str
    description: str
    env_kinds: list[str]


class Cancelled(BaseModel):
    """POST /api/episode/cancel."""

    status: Literal["cancelled"]
    episode_id: str
