"""The gateway's session bodies: AReaL's /rl/ routes, plus loraloop's experiment and run_id at start."""

from __future__ import annotations

from pydantic import Field

from loraloop.http_guards import RequestBody
from loraloop.input_rules import Identifier, Reward


class StartSession(RequestBody):
    """POST /rl/start_session (AReaL's body, plus loraloop's experiment and run_id)."""

    task_id: str = Field(
        min_length=1, max_length=256, description="the task the session plays; its episodes are grouped by it"
    )
    api_key: str | None = Field(
        None,
        min_length=16,
        max_length=256,
        pattern=r"^[\x21-\x7e]+$",
        description="a previous session's key: that session is stored and a new one starts "
        "with the same key (AReaL's refresh); visible ASCII only, as a key sent "
        "in an Authorization header must be",
    )
    experiment: Identifier | None = Field(
        None, description="the episode's mode (trajectories/<experiment>/); default LORALOOP_GATEWAY_EXPERIMENT"
    )
    run_id: Identifier | None = Field(None, description="the run folder (default: today, UTC)")


class SetReward(RequestBody):
    """POST /rl/set_reward: a completion's reward (the last completion's when interaction_id is null)."""

    reward: Reward = Field(description="finite, at most 1e6 either way (input_rules.MAX_REWARD)")
    interaction_id: str | None = Field(None, max_length=256, description="a completion's id (chatcmpl-…)")


class EndSession(RequestBody):
    """POST /rl/end_session (an empty object)."""
