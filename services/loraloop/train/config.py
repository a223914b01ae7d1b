"""Training configurations, one dataclass per algorithm, with the HALO seed's flag names."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class LoraTrainConfig:
    """What every LoRA trainer shares: base model, data, output, LoRA shape, optimiser, checkpoints."""

    base_model: str
    dataset_path: str
    output_dir: str
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.0
    target_modules: list[str] = field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )
    lr: float = 2e-4
    epochs: float = 3.0
    batch_size: int = 4
    gradient_accumulation_steps: int = 1
    max_length: int = 1024
    seed: int = 42
    logging_steps: int = 1
    load_in_4bit: bool = False  # unsloth on CUDA only: QLoRA-style 4-bit base weights
    save_steps: int = 0  # 0: no intermediate checkpoints
    resume: bool = False  # go on from the last checkpoint in output_dir


@dataclass
class BCConfig(LoraTrainConfig):
    """Behavioural cloning (TRL SFTTrainer) on prompt/completion rows."""

    whole_episodes: bool = False  # one sequence per episode, every turn in the loss (train/episode_rows.py)


@dataclass
class DPOConfig(LoraTrainConfig):
    """Direct preference optimisation (TRL DPOTrainer) on prompt/chosen/rejected rows."""

    beta: float = 0.1
    lr: float = 5e-5
    epochs: float = 2.0
    batch_size: int = 2


@dataclass
class GRPOConfig(LoraTrainConfig):
    """Offline GRPO (TRL GRPOTrainer): states as prompts, rewarded by the stored action returns."""

    beta: float = 0.0
    lr: float = 1e-5
    epochs: float = 1.0
    num_generations: int = 4
    max_completion_length: int = 96
    temperature: float = 1.0


@dataclass
class OnlineGRPOConfig(GRPOConfig):
    """Online GRPO: `dataset_path` is a task registry; completions are scored in the shell environment."""

    subset: str | None = "train"
    env_concurrency: int = 4


@dataclass
class RLConfig(LoraTrainConfig):
    """Online multi-turn RL (`loraloop train rl`): each iteration rolls out the adapter published last on a
    batch of tasks, weighs every assistant turn of every episode by its group-relative advantage, trains,
    and publishes the next version. `dataset_path` is a task registry; `output_dir` holds the run's state."""

    adapter_name: str = "rl"  # served as <adapter_name>-v<k>
    experiment: str = "smollm_rl"  # configs/experiments.yaml: the policy, max_steps and protocol of rollouts
    subset: str | None = "train"
    eval_subset: str | None = "test"  # held-out tasks, evaluated greedily every `eval_every` iterations
    eval_every: int = 1  # 0: no held-out evaluation
    eval_tasks: int | None = 16  # held-out tasks drawn with `seed` (None: all of eval_subset)
    iterations: int = 4
    tasks_per_iteration: int = 8  # --sample_size of each iteration's rollout
    rollouts_per_task: int = 4  # the group advantages compare within
    temperature: float = 1.0
    max_staleness: int = 0  # episodes sampled more than K versions before the one being trained are dropped
    init_adapter: str | None = None  # a PEFT adapter (BC warm start) published as the first version
    clip_eps: float = 0.2  # PPO clip of the importance ratio against the sampling logprobs
    scale_rewards: bool = True  # divide advantages by the group's standard deviation (GRPO); False: Dr. GRPO
    lr: float = 2e-5
    epochs: float = 1.0  # passes over an iteration's turns
    batch_size: int = 8  # turns per optimiser step
    max_length: int = 2048
    concurrency: int | None = None  # episodes in flight when rollouts run in this process
    # Train on stored episodes instead of rolling out: `<mode>/<run_id>` under trajectories/ (say the gateway's, played
    # by an outside agent in its own environment); no held-out evaluation (there is no registry to play).
    from_run: str | None = None
