"""From stored episodes to RL training rows: groups, group-relative advantages, token-exact turns.

An iteration's episodes are grouped by task. Each episode's advantage is its reward against its
group's mean (divided by the group's spread unless Dr. GRPO's unscaled form is asked for). Every
assistant turn of the episode then becomes training tokens carrying that advantage: the prompt
and completion token ids exactly as vLLM saw and sampled them, with the sampling logprobs for the
importance ratio. Nothing is re-tokenized. Turns whose prompt extends the previous turn's prompt
and completion are packed into one sequence (observation tokens masked), so a multi-turn episode
usually costs one forward pass.

What cannot be trained on is counted, never silently dropped: episodes that ended in an error
that is not the policy's, episodes without token ids, episodes too stale, groups whose rewards are
all equal (no signal: their advantages would be 0, or NaN once scaled), and turns longer than
`max_length`.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field

from loraloop.store.adapters import version_number
from loraloop.store.trajectories import Episode

# Ends that say nothing about the policy: the environment, a server or the run failed, or it never played.
NOT_THE_POLICY = ("env_error", "service_error", "model_error", "crash", "cancelled", "skipped")


@dataclass
class Row:
    """One training sequence: token ids, which of them the policy sampled, their sampling logprobs
    (aligned with `input_ids`, 0 where not sampled) and the advantage they carry."""

    input_ids: list[int]
    completion_mask: list[int]
    old_logprobs: list[float]
    advantage: float
    task_id: str


@dataclass
class BatchStats:
    """What an iteration's episodes gave, and what was left out and why."""

    episodes: int = 0
    trained_episodes: int = 0
    success: int = 0
    reward_sum: float = 0.0
    errored: int = 0
    no_token_ids: int = 0
    stale: int = 0
    equal_groups: int = 0  # groups skipped because every reward in them was the same
    too_long: int = 0  # turns longer than max_length
    rows: int = 0
    sampled_tokens: int = 0  # completion tokens trained on
    tokens: int = 0  # every token of every row (the forward pass's cost)
    versions: dict[str, int] = field(default_factory=dict)  # episodes per adapter version sampled with

    @property
    def mean_reward(self) -> float:
        """Mean reward over the policy's episodes (errors excluded)."""
        played = self.episodes - self.errored
        return self.reward_sum / played if played else 0.0

    @property
    def success_rate(self) -> float:
        """Solved share of the policy's episodes (errors excluded)."""
        played = self.episodes - self.errored
        return self.success / played if played else 0.0

    def as_dict(self) -> dict:
        """The counts plus mean reward and success rate, for the run's history and report."""
        return {**asdict(self), "mean_reward": round(self.mean_reward, 4), "success_rate": round(self.success_rate, 4)}


def episode_version(episode: Episode) -> int:
    """The adapter version number an episode was sampled with (0: the base model)."""
    adapter = episode.start.adapter
    return (version_number(adapter.version) or 0) if adapter and adapter.version else 0


def advantages(rewards: list[float], scale: bool) -> list[float] | None:
    """Group-relative advantages, or None when every reward is the same (nothing to learn from)."""
    mean = sum(rewards) / len(rewards)
    spread = math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards))
    if spread < 1e-9:
        return None
    return [(r - mean) / (spread if scale else 1.0) for r in rewards]


def turns(episode: Episode) -> list[tuple[list[int], list[int], list[float]]] | None:
    """The episode's sampled turns as (prompt ids, completion ids, logprobs), or None when a model step
    lacks them (an old episode, or a server that does not return token ids)."""
    out = []
    for step in episode.steps:
        if step.action_source != "worker":
            continue
        ids, logprobs = step.completion_token_ids, step.logprobs
        if step.prompt_token_ids is None or ids is None or logprobs is None or len(ids) != len(logprobs):
            return None
        out.append((step.prompt_token_ids, ids, logprobs))
    return out or None


def pack(
    episode_turns: list[tuple[list[int], list[int], list[float]]],
) -> list[tuple[list[int], list[int], list[float]]]:
    """Sequences (ids, mask, logprobs) from an episode's turns: a turn whose prompt starts with the sequence so far
    joins it (the observation between them masked), otherwise it starts a new sequence."""
    sequences: list[tuple[list[int], list[int], list[float]]] = []
    for prompt, completion, logprobs in episode_turns:
        current = sequences[-1] if sequences else None
        if current is not None and prompt[: len(current[0])] == current[0]:
            gap = len(prompt) - len(current[0])
            current[0].extend(prompt[len(current[0]) :])
            current[1].extend([0] * gap)
            current[2].extend([0.0] * gap)
        else:
            current = (list(prompt), [0] * len(prompt), [0.0] * len(prompt))
            sequences.append(current)
        current[0].extend(completion)
        current[1].extend([1] * len(completion))
        current[2].extend(logprobs)
    return sequences


def build_batch(
    episodes: list[Episode], *, version: int, max_staleness: int, scale_rewards: bool, max_length: int
) -> tuple[list[Row], BatchStats]:
    """Training rows from an iteration's episodes, trained at adapter `version`; see the module doc."""
    stats = BatchStats(episodes=len(episodes))
    groups: dict[str, list[tuple[Episode, list]]] = defaultdict(list)  # task -> (episode, its sampled turns)
    for episode in episodes:
        sampled_with = episode_version(episode)
        stats.versions[f"v{sampled_with}"] = stats.versions.get(f"v{sampled_with}", 0) + 1
        if episode.end.status in NOT_THE_POLICY:
            stats.errored += 1
            continue
        stats.success += episode.success
        stats.reward_sum += episode.end.reward
        if version - sampled_with > max_staleness:
            stats.stale += 1
            continue
        sampled = turns(episode)
        if sampled is None:
            stats.no_token_ids += 1
            continue
        groups[episode.start.task_id].append((episode, sampled))
    rows: list[Row] = []
    for task_id, group in groups.items():
        scores = advantages([e.end.reward for e, _ in group], scale_rewards) if len(group) > 1 else None
        if scores is None:
            stats.equal_groups += 1
            continue
        for (_, sampled), advantage in zip(group, scores):
            stats.trained_episodes += 1
            for ids, mask, logprobs in pack(sampled):
                if len(ids) > max_length:
                    stats.too_long += 1
                    continue
                rows.append(Row(ids, mask, logprobs, advantage, task_id))
                stats.sampled_tokens += sum(mask)
                stats.tokens += len(ids)
    stats.rows = len(rows)
    return rows, stats
