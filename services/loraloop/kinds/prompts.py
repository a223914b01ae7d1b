"""Chat messages for a turn, shared by the live policy and the dataset export so both see the same prompt: the
generic `chat` layout (`build_messages`), or the layout of a kind that brings its own builder (the web's: goal,
past actions, the current page), picked by the style an episode recorded (`build_prompt`)."""

from __future__ import annotations

from functools import cache

from loraloop.envs.base import Message, PromptBuilder
from loraloop.kinds.registry import kinds

CHAT = "chat"  # system, examples, task, then every (reply, observation) turn that fits


def build_messages(
    instructions: str,
    examples: list[Message],
    first_observation: str,
    turns: list[tuple[str, str]],
    char_budget: int = 4000,
) -> list[Message]:
    """System + one-shot examples + task, then (assistant, user) turns, oldest dropped past the budget.

    `turns` holds (model_output, next_observation) pairs. The system prompt, the examples and the
    task always stay; when the history grows past `char_budget` characters the oldest turns go.
    """
    head = [{"role": "system", "content": instructions}, *examples, {"role": "user", "content": first_observation}]
    tail: list[Message] = []
    used = sum(len(m["content"]) for m in head)
    for output, observation in reversed(turns):
        pair = [{"role": "assistant", "content": output}, {"role": "user", "content": observation}]
        cost = len(output) + len(observation)
        if tail and used + cost > char_budget:
            break
        tail = pair + tail
        used += cost
    return head + tail


@cache
def builder(style: str) -> PromptBuilder:
    """The function that lays out prompts of this style (`chat`, or the style a kind names with its own builder);
    an unknown style fails naming the known ones."""
    if style == CHAT:
        return build_messages
    for kind in kinds():  # the kinds after the one that names the style are not imported
        if kind.envs.prompt_builder and kind.envs.prompt_style == style:
            return kind.envs.prompt_builder
    known = dict.fromkeys([CHAT, *(k.envs.prompt_style for k in kinds() if k.envs.prompt_builder)])
    raise ValueError(f"unknown prompt style {style!r} (known: {', '.join(known)})")  # browsergym uses web's


def build_prompt(
    style: str,
    instructions: str,
    examples: list[Message],
    first_observation: str,
    turns: list[tuple[str, str]],
    char_budget: int = 4000,
) -> list[Message]:
    """The prompt for a prompt style: `chat` (the whole dialogue) or the layout of the kind that names the style.

    The live policy and the dataset exports both call this, with the style the episode recorded,
    so a dataset row holds exactly the prompt the agent saw.
    """
    return builder(style)(instructions, examples, first_observation, turns, char_budget)
