"""The learning run's plan (`loraloop agentbench`'s flags), apart from learning.py, which runs it: the CLI builds its
command from this dataclass at start, and must not import the trainer (torch) to do so; the rollout image, which has
no torch, runs the same CLI (TRL's shape: `<algo>_config.py` beside the code that runs it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from loraloop.defaults import TASK_SEED
from loraloop.errors import ConfigError


def option(default, help: str):
    """A plan field with the help its command-line flag shows (cli/common.dataclass_options reads it)."""
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class LearningPlan:
    """What a learning run does: the benchmark's registry and splits, the experiments that play the teacher,
    the evaluations and RL rollouts, BC and RL training, and the seeds."""

    name: str = option("agentbench", "names the run's store runs and adapters (agentbench-bc-s1, agentbench-rl-s1-v3…)")
    model: str = option("smollm2-135m", "the base model (`loraloop models prepare` name)")
    task_registry: str = option(
        "configs/tasks/agentbench-os", "the benchmark's registry (its train and held-out splits)"
    )
    train_subset: str = option("train", "the tasks trained on")
    heldout_subset: str = option("heldout", "the tasks judged on: never trained or tuned on")
    seeds: str = option("1,2,3", "training seeds, comma-separated")
    teacher: str = option("teacher", "the experiment whose episodes BC learns from")
    evaluator: str = option(
        "smollm_zero",
        "the experiment of every held-out evaluation (its protocol and round limit); the model is set per stage",
    )
    rl_experiment: str = option("smollm_rl", "the experiment of RL's rollouts")
    teacher_tasks: int = option(
        300,
        "train tasks the teacher plays, a seeded sample: BC's data (0: all; "
        "300 keeps BC within half an hour on 2 CPU cores)",
    )
    eval_tasks: int | None = option(None, "held-out tasks evaluated (default: all)")
    eval_max_steps: int | None = option(None, "rounds of an evaluation (default: the evaluator's, AgentBench's 8)")
    max_tokens: int = option(128, "longest reply in evaluations and RL rollouts")
    bc_epochs: float = option(1.0, "epochs of BC")
    bc_lr: float = option(5e-4, "BC learning rate")
    batch_size: int = option(4, "BC batch size")
    whole_episodes: bool = option(True, "BC on one sequence per episode (every turn in the loss)")
    rl_iterations: int = option(2, "RL iterations (rollout, train, publish)")
    rl_tasks: int = option(8, "train tasks per RL iteration (with --rl_rollouts 4: 32 episodes an iteration)")
    rl_rollouts: int = option(4, "episodes per task: the group advantages compare within")
    rl_lr: float = option(1e-4, "RL learning rate")
    rl_temperature: float = option(0.7, "RL rollouts' sampling temperature")
    rl_bypass_mode: bool = option(
        False, "RL clips against the sampler's logprobs, no rollout correction (`train rl --bypass_mode`)"
    )
    task_seed: int = option(TASK_SEED, "base of per-rollout seeds")

    def __post_init__(self) -> None:
        """Reject a plan that cannot run, naming the value."""
        self.seed_list()
        if self.teacher_tasks < 0:
            raise ConfigError(f"learning plan: teacher_tasks must be 0 (all) or more, got {self.teacher_tasks}")
        for name in ("bc_epochs", "bc_lr", "rl_lr", "batch_size", "max_tokens", "rl_rollouts", "rl_tasks"):
            if getattr(self, name) <= 0:
                raise ConfigError(f"learning plan: {name} must be positive, got {getattr(self, name)}")
        if self.rl_iterations < 0:
            raise ConfigError(f"learning plan: rl_iterations must be 0 or more, got {self.rl_iterations}")
        for name in ("eval_tasks", "eval_max_steps"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ConfigError(f"learning plan: {name} must be at least 1, got {getattr(self, name)}")

    def seed_list(self) -> list[int]:
        """The training seeds, in order; fails naming the value when it is not a comma-separated list of ints."""
        try:
            seeds = [int(s) for s in self.seeds.split(",") if s.strip()]
        except ValueError:
            seeds = []
        if not seeds or len(set(seeds)) != len(seeds):
            raise ConfigError(f"learning plan: seeds must be distinct integers separated by commas, got {self.seeds!r}")
        return seeds

    def run_id(self, model: str, seed: int | None = None) -> str:
        """The store run of one stage's episodes: `<name>-teacher`, `<name>-base`, `<name>-bc-s1`, …"""
        return f"{self.name}-{model}" + (f"-s{seed}" if seed is not None else "")
