"""What every export shares: episodes grouped by task, the state an agent saw at each step, ranking.

A state is the exact chat prompt the live policy built at that step (system prompt, one-shot
examples, task, history within the character budget), rebuilt with the same function, so a
dataset row trains on what the agent saw. Episodes are read one task at a time, which keeps
memory bounded by the largest task rather than the whole store.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from loraloop.kinds.prompts import build_prompt
from loraloop.kinds.registry import env_kind
from loraloop.store.backends import Store
from loraloop.store.records import LEGACY_KIND
from loraloop.store.trajectories import Episode, MalformedTrajectory, parse_episode, task_and_attempt


@dataclass
class State:
    """One step of one episode: the action taken there, whether it failed, and (on demand) the prompt."""

    key: str
    action: str
    step_idx: int
    error: bool
    action_source: str
    canonical: str | None
    _episode: Episode
    _turns: list[tuple[str, str]]
    _char_budget: int

    @property
    def prompt(self) -> list[dict]:
        """The chat the live policy built at this step (built only for states that become rows); for an outside
        agent's call the gateway recorded, the messages it sent."""
        sent = self._episode.steps[self.step_idx].messages
        if sent is not None:
            return sent
        start = self._episode.start
        return build_prompt(
            start.prompt_style,
            start.system_prompt,
            start.examples,
            start.first_observation or "",
            self._turns[: self.step_idx],
            self._char_budget,
        )


def states(episode: Episode, char_budget: int) -> list[State]:
    """The states of an episode in step order (none when its first observation is unknown).

    A state's key hashes the task and the whole history that led to it (not the possibly cut
    prompt), so two episodes share a state exactly when they got there the same way.
    """
    start = episode.start
    first = start.first_observation
    if first is None:
        return []
    history = hashlib.sha256(f"{start.task_id}\0{start.system_prompt}\0{first}".encode())
    turns: list[tuple[str, str]] = []
    out = []
    for i, step in enumerate(episode.steps):
        action = step.raw_output
        # an outside agent's action (the gateway's) has no kind here to parse it: its text is the action
        canonical = action.strip() if step.messages is not None else canonical_action(action, start.env)
        out.append(
            State(
                f"{start.task_id}:{history.hexdigest()[:16]}",
                action,
                i,
                bool(step.last_action_error),
                step.action_source,
                canonical,
                episode,
                turns,
                char_budget,
            )
        )
        if i + 1 < len(episode.steps):
            observation = episode.steps[i + 1].observation
            turns.append((action, observation))
            history.update(f"\0{action}\0{observation}".encode())
    return out


def episodes_by_task(store: Store, prefix: str, malformed: list[str]) -> Iterator[tuple[str, list[Episode]]]:
    """(task id, its episodes) for every task under the prefix; unreadable episodes go to `malformed`."""
    groups: dict[str, list[str]] = defaultdict(list)
    for key in store.list(prefix):
        found = task_and_attempt(key)
        if found:
            groups[found[0]].append(key)
    for _task, keys in sorted(groups.items()):
        episodes = []
        for key in keys:
            try:
                episodes.append(parse_episode(key, store.get_bytes(key)))
            except MalformedTrajectory as exc:
                malformed.append(str(exc))
        if episodes:
            yield episodes[0].start.task_id, episodes


def by_progress(episodes: list[Episode]) -> bool:
    """Whether a task's episodes carry progress scores (web episodes recorded since progress scores came in)."""
    return any(e.end.max_progress_score is not None for e in episodes)


def merit(episode: Episode, progress: bool) -> tuple[float, ...]:
    """How good an episode's outcome is, higher better: (max progress, return) when the task's episodes carry
    progress (an episode without a score counts as none), else (return,)."""
    if progress:
        return (episode.end.max_progress_score or 0.0, episode.end.reward)
    return (episode.end.reward,)


def recovery_actions(episode: Episode) -> int:
    """The steps a recovery policy took (Step.halo.recovery is set on them)."""
    return sum(1 for step in episode.steps if step.halo and step.halo.recovery)


def rank(episodes: list[Episode]) -> list[Episode]:
    """Best first, the seed's progress ranking (SPECS §5): highest max progress, then fewest steps, then fewest
    recovery actions. Return breaks ties in progress before the steps do, so a solved episode comes before an
    unsolved one that reached the same milestones. Where the task's episodes carry no progress (shell, tau2,
    older episodes), highest return, then fewest steps, then fewest errors."""
    progress = by_progress(episodes)
    return sorted(
        episodes,
        key=lambda e: (
            tuple(-m for m in merit(e, progress)),
            len(e.steps),
            recovery_actions(e) if progress else e.end.error_count,
            e.key,
        ),
    )


@lru_cache(maxsize=65536)
def canonical_action(text: str, env: str = LEGACY_KIND) -> str | None:
    """An action as its environment kind understands it (`bash: ls`, `answer: 3`, `finish`,
    `web: click('12')`); None if unparseable.

    Two replies that differ only in their Think line or formatting are the same action. Cached:
    agents repeat the same replies across episodes and states.
    """
    return env_kind(env).envs.canonical_action(text)


def assistant(text: str) -> list[dict]:
    """A completion in TRL's conversational format."""
    return [{"role": "assistant", "content": text}]
