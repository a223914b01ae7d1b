"""Online GRPO: TRL's GRPOTrainer samples first actions, the task's own environment scores them.

Each prompt is a task's opening state exactly as the live policy sees it (the env's reset, laid out by its
prompt style). Each sampled completion is played in a fresh environment of that task, of whatever kind: an
action that ends the episode gets the env's reward; one that does not is finished as the kind says
(`EnvFactory.finish_one_step`: the shell answers with its command's last output line, as the scripted teacher
would) or keeps the reward the env gave it; a reply that holds no action earns -1. Every scored completion is
stored as an episode (mode `grpo_online`), so the data an online run saw is kept like any rollout's.
"""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

from loraloop.envs.base import EnvOptions
from loraloop.errors import LoraloopError
from loraloop.kinds.prompts import build_prompt
from loraloop.kinds.registry import env_kind
from loraloop.rollout.sampler import new_run_id
from loraloop.rollout.session import EpisodeSession
from loraloop.settings import Settings, get_settings
from loraloop.store import open_store
from loraloop.store.backends import Store
from loraloop.store.records import Provenance
from loraloop.task_registry import Registry, Task, load_registry
from loraloop.train.backend import load_model
from loraloop.train.config import OnlineGRPOConfig
from loraloop.train.harness import common_args, train_and_save

INVALID = -1.0
MODE = "grpo_online"


def score(task: Task, completion: str, settings: Settings, store: Store, run_id: str, attempt: int) -> float:
    """Play one completion as the first (and last) action of an episode of `task`, store it; return its reward."""
    factory = env_kind(task.env).envs
    env = factory.make_env(task, settings, EnvOptions(max_steps=2))
    session = EpisodeSession(
        store, env, task, mode=MODE, run_id=run_id, attempt=attempt, provenance=Provenance(policy="grpo")
    )
    status = error = None
    try:
        session.start()
        valid = factory.canonical_action(completion) is not None
        result = session.act(completion, source="grpo")
        if valid and not result.done and factory.finish_one_step is not None:
            session.act(factory.finish_one_step(result.observation), source="grpo")
        if not valid:
            session.outcome.reward, status = INVALID, "invalid_action"
    except LoraloopError as exc:
        status, error = "env_error", str(exc)
    finally:
        env.close()
    session.finish(status, error)
    return session.outcome.reward


class EnvironmentReward:
    """TRL reward function: score a batch of completions in parallel containers, store each episode."""

    __name__ = "env_reward"

    def __init__(self, registry: Registry, settings: Settings, concurrency: int = 4) -> None:
        self.registry = registry
        self.settings = settings
        self.concurrency = concurrency
        self.store = open_store(settings=settings)
        self.run_id = new_run_id()
        self.attempts = itertools.count()

    def __call__(self, completions, task_id, **_kwargs) -> list[float | None]:
        """One reward per completion, from the environment."""
        texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]

        def one(i: int) -> float:
            return score(
                self.registry.get(task_id[i]), texts[i], self.settings, self.store, self.run_id, next(self.attempts)
            )

        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(one, range(len(texts))))


def opening_prompt(task: Task, settings: Settings) -> list[dict[str, str]]:
    """The prompt the live policy starts an episode of `task` with: its env's reset, laid out by its style."""
    env = env_kind(task.env).envs.make_env(task, settings, EnvOptions(max_steps=2))
    try:
        first, _ = env.reset()
        return build_prompt(env.prompt_style, env.instructions, env.examples, first, [])
    finally:
        env.close()


def opening_prompts(registry: Registry, subset: str | None, settings: Settings, concurrency: int = 4) -> list[dict]:
    """One row per task: the prompt the live policy starts with, and the task id the reward needs (the envs are
    reset `concurrency` at a time: a shell task's init runs in its container)."""
    tasks = registry.select(subset)
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        prompts = list(pool.map(lambda task: opening_prompt(task, settings), tasks))
    return [{"prompt": prompt, "task_id": task.index} for task, prompt in zip(tasks, prompts)]


def train_grpo_online(cfg: OnlineGRPOConfig, settings: Settings | None = None) -> dict:
    """Train a LoRA adapter with GRPO whose rewards come from real episodes in the tasks' own environments."""
    import math

    from datasets import Dataset
    from trl import GRPOConfig as TRLGRPOConfig
    from trl import GRPOTrainer

    settings = settings or get_settings()
    registry = load_registry(cfg.dataset_path)
    rows = opening_prompts(registry, cfg.subset, settings, cfg.env_concurrency)
    reward = EnvironmentReward(registry, settings, cfg.env_concurrency)
    model, tokenizer, peft_config = load_model(cfg)
    args = TRLGRPOConfig(
        **common_args(cfg),
        beta=cfg.beta,
        num_generations=cfg.num_generations,
        max_completion_length=cfg.max_completion_length,
        temperature=cfg.temperature,
        generation_batch_size=cfg.num_generations * math.ceil(cfg.batch_size / cfg.num_generations),
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[reward],
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=peft_config,
    )
    tokens = len(rows) * cfg.num_generations * cfg.max_completion_length
    return train_and_save(
        trainer,
        tokenizer,
        cfg,
        "grpo-online",
        len(rows),
        tokens,
        {"subset": cfg.subset, "episodes_scored": f"trajectories/grpo_online/{reward.run_id}/"},
    )
