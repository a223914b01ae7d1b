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
    transfer_subset: str = option(
        "", "a second held-out set judged the same way and reported apart, for transfer (empty: none)"
    )
    seeds: str = option("1,2,3", "training seeds, comma-separated")
    teacher: str = option("teacher", "the experiment whose episodes BC learns from")
    evaluator: str = option(
        "smollm_zero",
        "the experiment of every held-out evaluation (its protocol and round limit); the model is set per stage",
    )
    rl_experiment: str = option(
        "smollm_agentbench_rl", "the experiment of RL's rollouts (AgentBench's 8 rounds, as the evaluations)"
    )
    teacher_tasks: int = option(
        300,
        "train tasks the teacher plays, a seeded sample: BC's data (0: all; "
        "300 keeps BC within half an hour on 2 CPU cores)",
    )
    teacher_rollouts: int = option(1, "episodes the teacher plays per train task (a task of several seeds: one each)")
    eval_tasks: int | None = option(None, "held-out tasks evaluated (default: all)")
    eval_rollouts: int = option(1, "episodes per held-out task (a task of several seeds: one each)")
    eval_max_steps: int | None = option(None, "rounds of an evaluation (default: the evaluator's, AgentBench's 8)")
    max_tokens: int = option(128, "longest reply in evaluations and RL rollouts")
    bc_epochs: float = option(1.0, "epochs of BC")
    bc_lr: float = option(5e-4, "BC learning rate")
    batch_size: int = option(4, "BC batch size")
    whole_episodes: bool = option(True, "BC on one sequence per episode (every turn in the loss)")
    group_by_length: bool = option(True, "BC batches of like length (less padding trained through)")
    bc_max_length: int = option(
        2048, "tokens a BC row is cut to: vLLM's context here (BC's 1,024 cut 39 of MiniWoB's 1,211 rows' replies off)"
    )
    rl_iterations: int = option(4, "RL iterations (rollout, train, publish)")
    rl_tasks: int = option(8, "train tasks per RL iteration (with --rl_rollouts 8: 64 episodes an iteration)")
    rl_rollouts: int = option(
        8, "episodes per task: the group advantages compare within (8: fewer groups of equal reward at low success)"
    )
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
        for name in (
            "bc_epochs",
            "bc_lr",
            "rl_lr",
            "batch_size",
            "bc_max_length",
            "max_tokens",
            "rl_rollouts",
            "rl_tasks",
            "teacher_rollouts",
            "eval_rollouts",
        ):
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

    def subsets(self) -> list[str]:
        """The subsets the run plays: train, held out, and the transfer subset when there is one."""
        return [self.train_subset, self.heldout_subset] + ([self.transfer_subset] if self.transfer_subset else [])

    def run_id(self, model: str, seed: int | None = None) -> str:
        """The store run of one stage's episodes: `<name>-teacher`, `<name>-base`, `<name>-bc-s1`, …"""
        return f"{self.name}-{model}" + (f"-s{seed}" if seed is not None else "")


@dataclass(frozen=True)
class MiniWobPlan(LearningPlan):
    """`loraloop miniwob`: the same run on MiniWoB++ (configs/tasks/miniwob): the scripted solver's episodes on
    the 60 trained types' train seeds, judged on their held-out seeds (heldout-seed) and, for transfer, on the 65
    held-out types (heldout-type), never trained or tuned on. The defaults size a seed for the 2-core VM."""

    name: str = option("miniwob", "names the run's store runs and adapters (miniwob-bc-s1, miniwob-rl-s1-v3…)")
    task_registry: str = option("configs/tasks/miniwob", "the benchmark's registry (its train and held-out splits)")
    heldout_subset: str = option("heldout-seed", "the trained types' held-out seeds: never trained or tuned on")
    transfer_subset: str = option("heldout-type", "the 65 held-out types, judged for transfer (empty: none)")
    teacher: str = option("miniwob_teacher", "the experiment whose episodes BC learns from")
    evaluator: str = option("smollm_miniwob", "the experiment of every held-out evaluation; the model is set per stage")
    rl_experiment: str = option("smollm_miniwob_rl", "the experiment of RL's rollouts")
    teacher_tasks: int = option(0, "train tasks (types) the teacher plays (0: all 60)")
    teacher_rollouts: int = option(10, "train seeds the teacher plays per type (BC's data)")
    eval_rollouts: int = option(1, "held-out seeds per type in each evaluation (1: 60 episodes, and 65 for transfer)")
    max_tokens: int = option(48, "longest reply in evaluations and RL rollouts (a MiniWoB action is one short line)")
    rl_iterations: int = option(2, "RL iterations (rollout, train, publish)")
    rl_rollouts: int = option(4, "episodes per task (type, one seed each): the group advantages compare within")
