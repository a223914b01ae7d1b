"""Training configurations, one dataclass per algorithm, with the HALO seed's flag names.

`loraloop train ALGO`'s flags are built from these fields (cli/train.py), as TRL builds its scripts' flags from its
configs: a field's metadata holds its help and any other spelling of its flag. This module imports no trainer
(torch), so the CLI can build its commands in the rollout image, which has none."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field


def flag(default, help: str, *aliases: str, factory=None):
    """A config field with the help its `--name` flag shows and the flag's other spellings (MISSING: required)."""
    metadata = {"help": help, "aliases": aliases}
    if factory is not None:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)  # default=MISSING is a field without a default


@dataclass
class LoraTrainConfig:
    """What every LoRA trainer shares: base model, data, output, LoRA shape, optimiser, checkpoints."""

    base_model: str = flag(MISSING, "the base model's folder (default LORALOOP_MODEL_DIR)", "--base-model")
    dataset_path: str = flag(
        MISSING,
        "a file, file:// or s3:// URL (default volumes/datasets/ALGO.jsonl; grpo-online, rl: a task registry)",
        "--dataset-path",
    )
    output_dir: str = flag(MISSING, "default volumes/checkpoints/ALGO_lora", "--output-dir")
    lora_r: int = flag(16, "LoRA rank")
    lora_alpha: int = flag(32, "LoRA alpha")
    lora_dropout: float = flag(0.0, "LoRA dropout")
    target_modules: list[str] = flag(
        None,
        "modules LoRA adapts (repeat the flag)",
        factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
    )
    lr: float = flag(2e-4, "learning rate")
    optim: str = flag(
        "adamw_torch", "bc, dpo, grpo, grpo-online: the optimiser, by transformers' names (adamw_torch, sgd, adafactor)"
    )
    epochs: float = flag(3.0, "passes over the data")
    batch_size: int = flag(4, "rows per device step")
    gradient_accumulation_steps: int = flag(1, "device steps per optimiser step")
    max_length: int = flag(1024, "tokens a row is cut to")
    seed: int = flag(42, "training seed")
    logging_steps: int = flag(1, "log every N steps")
    backend: str = flag(
        "auto", "auto | unsloth | peft: unsloth's FastLanguageModel (CUDA) or TRL+PEFT; auto: unsloth where it can run"
    )
    load_in_4bit: bool = flag(False, "unsloth on CUDA: 4-bit base weights (QLoRA-style)")
    save_steps: int = flag(0, "checkpoint every N steps (0: none in between)")
    resume: bool = flag(False, "go on from the last checkpoint in --output_dir")


@dataclass
class BCConfig(LoraTrainConfig):
    """Behavioural cloning (TRL SFTTrainer) on prompt/completion rows."""

    whole_episodes: bool = flag(False, "bc: one sequence per episode, every turn in the loss (train/episode_rows.py)")
    group_by_length: bool = flag(
        False,
        "bc: batches of sequences of like length, so less padding is trained through (transformers' "
        "train_sampling_strategy='group_by_length'; the order is still seeded)",
    )


@dataclass
class DPOConfig(LoraTrainConfig):
    """Direct preference optimisation (TRL DPOTrainer) on prompt/chosen/rejected rows."""

    beta: float = flag(0.1, "dpo, grpo: KL weight")
    lr: float = 5e-5
    epochs: float = 2.0
    batch_size: int = 2


@dataclass
class GRPOConfig(LoraTrainConfig):
    """Offline GRPO (TRL GRPOTrainer): states as prompts, rewarded by the stored action returns."""

    beta: float = flag(0.0, "dpo, grpo: KL weight")
    lr: float = 1e-5
    epochs: float = 1.0
    num_generations: int = flag(4, "grpo: completions per prompt")
    max_completion_length: int = flag(96, "grpo: tokens a completion may have")
    temperature: float = flag(1.0, "grpo, rl: sampling temperature")


@dataclass
class OnlineGRPOConfig(GRPOConfig):
    """Online GRPO: `dataset_path` is a task registry; completions are scored in the shell environment."""

    subset: str | None = flag("train", "grpo-online, rl: tasks of the registry to train on")
    env_concurrency: int = flag(4, "grpo-online: environments scoring completions at once")


@dataclass
class RLConfig(LoraTrainConfig):
    """Online multi-turn RL (`loraloop train rl`): each iteration rolls out the adapter published last on a
    batch of tasks, weighs every assistant turn of every episode by its group-relative advantage, trains,
    and publishes the next version. `dataset_path` is a task registry; `output_dir` holds the run's state."""

    adapter_name: str = flag("rl", "rl: published as NAME-v<k>")
    experiment: str = flag("smollm_rl", "rl: the rollouts' experiment (configs/experiments.yaml: policy, max_steps)")
    subset: str | None = flag("train", "grpo-online, rl: tasks of the registry to train on")
    eval_subset: str | None = flag("test", "rl: held-out tasks, evaluated greedily every --eval_every iterations")
    eval_every: int = flag(1, "rl: held-out eval every N iterations (0: none)")
    eval_tasks: int | None = flag(16, "rl: held-out tasks drawn with --seed (none: all of --eval_subset)")
    iterations: int = flag(4, "rl: rollout-train-publish iterations")
    tasks_per_iteration: int = flag(8, "rl: tasks sampled per iteration", "--sample_size")
    rollouts_per_task: int = flag(4, "rl: the group size (>= 2) advantages compare within")
    temperature: float = flag(1.0, "grpo, rl: sampling temperature")
    max_staleness: int = flag(
        0,
        "rl: drop episodes sampled more than K versions before the one being trained; K >= 1 makes the run "
        "asynchronous (the rollouts of iterations k+1..k+K sampled while iteration k trains)",
    )
    async_rollouts: bool = flag(False, "rl: asynchronous rollouts, as --max_staleness 1 when it is 0", "--async")
    sampler: str = flag(
        "uniform",
        "rl: how an iteration's tasks are drawn: uniform | difficulty-pool (tasks whose last group all solved or all "
        "failed are drawn at most --easy_fraction / --hard_fraction of an iteration, as prime-rl's buffer)",
    )
    easy_border: float = flag(1.0, "rl, difficulty-pool: a last group solved at this rate or above makes a task easy")
    hard_border: float = flag(0.0, "rl, difficulty-pool: a last group solved at this rate or below makes a task hard")
    easy_fraction: float = flag(0.1, "rl, difficulty-pool: share of an iteration's tasks drawn from the easy pool")
    hard_fraction: float = flag(0.1, "rl, difficulty-pool: share of an iteration's tasks drawn from the hard pool")
    init_adapter: str | None = flag(None, "rl: warm start (a PEFT adapter folder), published as the first version")
    clip_eps: float = flag(0.2, "rl: PPO clip of the ratio (against the proximal policy; in bypass mode the sampler)")
    bypass_mode: bool = flag(
        False, "rl: clip against the sampler's logprobs; no proximal pass, no importance weights (the loop before)"
    )
    rollout_is: str | None = flag("token", "rl: truncated importance weights trainer/sampler: token | sequence | none")
    rollout_is_threshold: float = flag(2.0, "rl: cap of the importance weight (above 1)")
    rollout_rs: str | None = flag(
        None, "rl: mask tokens or sequences whose weight is outside [1/threshold, threshold]: token | sequence | none"
    )
    rollout_rs_threshold: float = flag(2.0, "rl: the masking threshold (above 1)")
    scale_rewards: bool = flag(True, "rl: divide advantages by the group's standard deviation (off: Dr. GRPO)")
    lr: float = 2e-5
    epochs: float = 1.0  # passes over an iteration's turns
    batch_size: int = 8  # turns per optimiser step
    micro_batch_size: int = flag(
        1, "rl: turns per forward pass; an optimiser step accumulates batch_size / micro_batch_size of them"
    )
    fused_logprobs: bool = flag(
        False,
        "rl: logprobs through TRL's fused LM head (no vocabulary-wide logits held; for large vocabularies and long "
        "turns: SmolLM2 on the CPU took 0.3-0.4 GiB and up to 40 per cent more, bench/results/rl_memory.md)",
    )
    activation_checkpointing: bool = flag(
        False,
        "rl: recompute each layer's activations in the backward pass instead of holding them (transformers' "
        "activation checkpointing, non-reentrant) in every iteration: less memory for long turns, more time "
        "(bench/rl_memory.py)",
    )
    activation_checkpointing_from: int = flag(
        1024,
        "rl: activation checkpointing in an iteration whose forward passes reach N tokens (turns a pass x the longest "
        "turn; 0: only with --activation_checkpointing). TRL and unsloth checkpoint always; here short turns keep "
        "their speed, long ones their memory (SmolLM2 at 2,048 tokens a turn: 0.65-0.70x the peak, 1.16-1.20x the "
        "step)",
    )
    max_length: int = 2048
    concurrency: int | None = flag(None, "rl: episodes in flight when rollouts run in this process")
    from_run: str | None = flag(
        None,
        "rl: train on the stored episodes of MODE/RUN_ID (e.g. the gateway's) instead of rolling out; no held-out eval",
    )


CONFIGS = {
    "bc": BCConfig,
    "dpo": DPOConfig,
    "grpo": GRPOConfig,
    "grpo-online": OnlineGRPOConfig,
    "rl": RLConfig,
}
