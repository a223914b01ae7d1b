"""`loraloop train rl`: online multi-turn RL on the loop's own parts. This module does each stage's work (`RLRun`);
orchestrator.run_rl carries the plan out, iteration by iteration, as it carries out the loop's turns.

Each iteration:
1. rollout: one job (`--rollouts_per_task G` on `--tasks_per_iteration` tasks) through the path
   `loraloop rollout` uses (the API, the broker or this process), sampled by the version published
   last (`<adapter>-v<k>`; the base model before the first); or, with `--from_run MODE/RUN_ID`, the
   episodes stored there (an outside agent's, recorded by the gateway: serve/gateway), grouped by task;
2. train: the episodes, read back from the store, become token-exact rows with group-relative
   advantages (train/rl_batch.py), trained with the clipped loss (train/rl_trainer.py);
3. publish: the adapter becomes version k+1 in every vLLM of PUBLISH_VLLM_URLS, verified;
4. eval (every `--eval_every`): held-out tasks played greedily by the new version.

The store is the run's memory. Each version's metadata names the iteration that made it, run ids
are fixed by iteration (`<adapter>-it0003`) and evaluation ids by version, so a run killed at any
point and started again goes on after the last published version: stored episodes are not played
again, no version is published twice. The history (one row per iteration), rl_report.md,
rl_curve.png and TensorBoard logs are written under `--output_dir` after every iteration.
"""

from __future__ import annotations

import json
import random
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from loraloop.charts import rl_curve
from loraloop.errors import ConfigError
from loraloop.rollout.experiments import get_experiment
from loraloop.serve.publish import publish, retire, serve_version, vllm_urls
from loraloop.service.client import LocalJobs, jobs_client, once_ended
from loraloop.service.models import JobRequest
from loraloop.service.progress import follow
from loraloop.settings import Settings
from loraloop.store import adapters, open_store
from loraloop.store.trajectories import iter_episodes, run_prefix
from loraloop.task_registry import load_registry, shared_registry
from loraloop.train.backend import load_model
from loraloop.train.config import RLConfig
from loraloop.train.harness import common_args
from loraloop.train.rl_batch import NOT_THE_POLICY, Row, build_batch, turns
from loraloop.train.rl_trainer import (
    Correction,
    RLTrainer,
    StepBar,
    add_fused_head,
    as_dataset,
    checkpointing_off,
    collate,
    first_step_rows,
    proximal_logprobs,
    step_layout,
    world_size,
)
from loraloop.train.task_pools import Draw, PoolRules, draw, last_rates
from loraloop.train.verify_logprobs import save_trainer_logprobs

if TYPE_CHECKING:
    import torch

console = Console(stderr=True)


@contextmanager
def phase_bar(label: str):
    """A live bar (pulsing, with elapsed time) for a phase whose length is not known ahead, such as publish."""
    with Progress(
        SpinnerColumn(), TextColumn(label), BarColumn(), TimeElapsedColumn(), console=console, transient=True
    ) as progress:
        progress.add_task(label, total=None)
        yield


def publish_version(settings: Settings, adapter_dir: Path, name: str) -> int:
    """Publish the adapter as the next version of `name` into every vLLM, under a live bar; return its number."""
    with phase_bar(f"publish {name} into {len(vllm_urls(settings))} vLLM (load, verify)"):
        metadata = publish(settings, adapter_dir, name)
    number = adapters.version_number(metadata["version"])
    if number is None:  # publish names every version v<k>
        raise ConfigError(f"publish returned {metadata['version']!r} for {name}, not a version name (v<k>)")
    return number


LEVELS = ("token", "sequence")


SAMPLERS = ("uniform", "difficulty-pool")


def pool_rules(cfg: RLConfig) -> PoolRules:
    """The difficulty pools' borders and shares from the config's flags."""
    return PoolRules(cfg.easy_border, cfg.hard_border, cfg.easy_fraction, cfg.hard_fraction)


def correction(cfg: RLConfig) -> Correction | None:
    """The trainer's rollout correction from the flags (None: bypass mode); a level or threshold that makes no
    sense fails naming the flag."""
    for name in ("rollout_is", "rollout_rs"):
        level = getattr(cfg, name)
        if level not in (*LEVELS, "none", None):
            raise ConfigError(f"--{name} must be one of token, sequence or none, got {level!r}")
    for name in ("rollout_is_threshold", "rollout_rs_threshold"):
        if getattr(cfg, name) <= 1:
            raise ConfigError(
                f"--{name} must be above 1 (a weight cap of at most 1 trains on nothing), got {getattr(cfg, name)}"
            )
    if cfg.bypass_mode:
        return None
    return Correction(
        rollout_is=cfg.rollout_is if cfg.rollout_is in LEVELS else None,
        rollout_is_threshold=cfg.rollout_is_threshold,
        rollout_rs=cfg.rollout_rs if cfg.rollout_rs in LEVELS else None,
        rollout_rs_threshold=cfg.rollout_rs_threshold,
    )


def layout_of(cfg: RLConfig) -> tuple[int, int]:
    """(turns per forward pass, passes per process) of an optimiser step under this run's training processes
    (`accelerate launch --num_processes N`; 1 in a plain process); a ConfigError naming the flags when the step's
    turns do not split into whole passes on every process."""
    layout = step_layout(cfg.batch_size, cfg.micro_batch_size, world_size())
    if layout is None:
        raise ConfigError(
            f"--batch_size {cfg.batch_size} turns do not split into passes of --micro_batch_size "
            f"{cfg.micro_batch_size} on each of the {world_size()} training processes (accelerate's --num_processes): "
            "make the batch size a multiple of their product"
        )
    return layout


def checkpointing_for(cfg: RLConfig, rows: list[Row]) -> bool:
    """Whether an iteration's forward passes recompute each layer's activations in the backward pass instead of
    holding them: always with --activation_checkpointing, else when a pass reaches --activation_checkpointing_from
    tokens (turns a pass times the longest turn, the padded width). A pass holds activations in proportion to its
    tokens and the weights do not grow with them, so only long passes gain; TRL's GRPOConfig and unsloth
    checkpoint every pass, which on the CPU costs short turns about 1.4x the step's time for little memory."""
    if cfg.activation_checkpointing:
        return True
    if not cfg.activation_checkpointing_from or not rows:  # 0: never by length
        return False
    longest = max(len(row.input_ids) for row in rows)
    return layout_of(cfg)[0] * longest >= cfg.activation_checkpointing_from


def check_from_run(from_run: str, settings: Settings) -> None:
    """Refuse a `--from_run` that names no stored run, or one with nothing RL can train on: episodes without their
    model replies' token ids and sampling logprobs."""
    mode, _, run_id = from_run.partition("/")
    if not mode or not run_id or "/" in run_id:
        raise ConfigError(f"--from_run {from_run!r}: name a stored run as MODE/RUN_ID (trajectories/MODE/RUN_ID/)")
    prefix = run_prefix(mode, run_id)
    seen, first = 0, None
    for episode in iter_episodes(open_store(settings=settings), prefix):  # read on only while none is trainable
        if turns(episode) is not None:
            return
        seen, first = seen + 1, first or episode.key
    if not seen:
        raise ConfigError(f"--from_run {from_run}: no episodes under {prefix} in {settings.store_url}")
    raise ConfigError(
        f"--from_run {from_run}: none of its {seen} episodes holds the token ids and sampling logprobs of its model "
        f"replies (the first: {first}), and RL's ratio and importance weights are taken against them: episodes of "
        "a scripted policy, or of a client that called the model without the gateway"
    )


def check_config(cfg: RLConfig, settings: Settings) -> None:
    """Refuse, before any model is loaded or episode played, what cannot give a useful run; name the flag."""
    if cfg.rollouts_per_task < 2:
        raise ConfigError(
            f"--rollouts_per_task {cfg.rollouts_per_task}: RL compares the episodes of a task with "
            "each other, so it needs at least 2 per task"
        )
    for flag, value in (
        ("iterations", cfg.iterations),
        ("tasks_per_iteration", cfg.tasks_per_iteration),
        ("batch_size", cfg.batch_size),
    ):
        if value < 1:
            raise ConfigError(f"--{flag} must be at least 1, got {value}")
    if cfg.max_staleness < 0 or cfg.eval_every < 0:
        raise ConfigError("--max_staleness and --eval_every must be 0 or more")
    if staleness(cfg) + 1 > settings.max_loras:
        raise ConfigError(
            f"--max_staleness {staleness(cfg)}: rollouts may sample any of the newest {staleness(cfg) + 1} versions, "
            f"but vLLM serves at most {settings.max_loras} adapters at once (--max-loras, LORALOOP_MAX_LORAS / "
            "MAX_LORAS): lower --max_staleness or raise it and restart vLLM"
        )
    if cfg.sampler not in SAMPLERS:
        raise ConfigError(f"--sampler {cfg.sampler!r}: choose one of {', '.join(SAMPLERS)}")
    if cfg.sampler == "difficulty-pool":
        problems = pool_rules(cfg).problems()
        if problems:
            raise ConfigError("; ".join(problems))
        if cfg.from_run is not None:
            raise ConfigError("--sampler difficulty-pool draws the tasks to roll out; --from_run rolls out none")
    correction(cfg)  # the rollout correction's flags, checked
    if not 1 <= cfg.micro_batch_size <= cfg.batch_size or cfg.batch_size % cfg.micro_batch_size:
        raise ConfigError(
            f"--micro_batch_size {cfg.micro_batch_size} must divide the batch size {cfg.batch_size} "
            "(turns per optimiser step) into whole forward passes"
        )
    layout_of(cfg)
    if cfg.activation_checkpointing_from < 0:
        raise ConfigError(
            f"--activation_checkpointing_from {cfg.activation_checkpointing_from}: a number of tokens, or 0 "
            "(checkpointing only with --activation_checkpointing)"
        )
    if cfg.from_run is not None:
        check_from_run(cfg.from_run, settings)
    if cfg.lora_r > settings.max_lora_rank:
        raise ConfigError(
            f"--lora_r {cfg.lora_r} exceeds vLLM's --max-lora-rank {settings.max_lora_rank}: "
            "vLLM could not load the adapter (raise LORALOOP_MAX_LORA_RANK and restart vLLM, or "
            "lower --lora_r)"
        )
    if cfg.init_adapter:
        rank = adapters.check_adapter_dir(Path(cfg.init_adapter)).get("r", 0)
        if rank > settings.max_lora_rank:
            raise ConfigError(
                f"--init_adapter {cfg.init_adapter}: LoRA rank {rank} exceeds vLLM's "
                f"--max-lora-rank {settings.max_lora_rank}"
            )
    if cfg.from_run is not None:  # nothing is rolled out or evaluated: no experiment, no registry
        return
    experiment = get_experiment(settings.experiments_path, cfg.experiment)
    if experiment.policy != "openai":
        raise ConfigError(
            f"--experiment {cfg.experiment}: RL needs a model policy (policy: openai), got {experiment.policy!r}"
        )
    if experiment.halo:  # cache, macro, recovery and manager steps carry no worker tokens to train on
        raise ConfigError(
            f"--experiment {cfg.experiment}: RL samples a worker alone; turn its manager, vac, macros and recovery off"
        )
    registry = load_registry(cfg.dataset_path)
    for subset in (cfg.subset, cfg.eval_subset if cfg.eval_every else None):
        registry.select(subset)  # a subset that matches no task fails here, naming it and the known ones


class RLRun:
    """One RL run: its config, the store it remembers in, and the policy being trained."""

    def __init__(self, cfg: RLConfig, settings: Settings) -> None:
        self.cfg = cfg
        self.settings = settings
        self.store = open_store(settings=settings)
        self.out = Path(cfg.output_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.jobs = jobs_client(settings, concurrency=cfg.concurrency)
        self.history: list[dict] = self._read_history()
        self.replays: dict[str, int] = {}  # a job's episodes played again after an infrastructure failure, by run id
        self.correction = correction(cfg)  # None: bypass mode
        self.fused = False  # the policy has TRL's fused LM head (set by load_policy)
        self.model: Any = None  # the policy (a PEFT model) once load_policy ran
        self.tokenizer: Any = None
        self.optimizer: torch.optim.Optimizer | None = None
        self._writer: Any = None
        self.trained_steps = 0
        self.rates: dict[str, float] = {}  # each task's success rate in its last group (difficulty-pool sampler)

    def overlaps_in_process(self) -> bool:
        """Whether asynchronous mode plays the next iteration's episodes in this process's threads (no rollout API,
        no broker), where they share the interpreter lock with training and slow it (bench/results/rl_async.md)."""
        return bool(self.cfg.max_staleness) and isinstance(self.jobs, LocalJobs)

    # -- where the run stands -------------------------------------------------------------------
    def published(self) -> tuple[int, int]:
        """(newest version number, the iteration that made it): (0, -1) before anything was published,
        and iteration -1 for the warm-start version."""
        known = adapters.versions(self.store, self.cfg.adapter_name)
        if not known:
            return 0, -1
        meta = adapters.read_metadata(self.store, self.cfg.adapter_name, adapters.version_name(known[-1]))
        return known[-1], meta.get("training_metrics", {}).get("rl_iteration", -1)

    def served(self, version: int) -> str:
        """The served model name of a version (the base model's for version 0)."""
        if version == 0:
            return self.settings.base_model_name
        return adapters.served_name(self.cfg.adapter_name, adapters.version_name(version))

    def _read_history(self) -> list[dict]:
        """The rows written so far (none for a new run)."""
        path = self.out / "rl_history.json"
        return json.loads(path.read_text()) if path.is_file() else []

    # -- the policy being trained -----------------------------------------------------------------
    def load_policy(self, version: int) -> None:
        """The trainable model: base with LoRA, from the version given (its weights from the store) or fresh."""
        import torch
        from peft import PeftModel, get_peft_model, set_peft_model_state_dict
        from safetensors.torch import load_file

        start = None
        if version:
            start = adapters.download(
                self.store, self.cfg.adapter_name, adapters.version_name(version), self.out / "versions"
            )
        model, self.tokenizer, peft_config = load_model(self.cfg)
        if peft_config is None:  # unsloth: LoRA is attached already
            if start:
                set_peft_model_state_dict(model, load_file(start / "adapter_model.safetensors"))
        elif start:
            model = PeftModel.from_pretrained(model, start, is_trainable=True)
        else:
            model = get_peft_model(model, peft_config)
        self.unsloth = peft_config is None
        self.fused = not self.unsloth and self.cfg.fused_logprobs  # unsloth patches the forward its own way
        if self.fused:
            add_fused_head(model)
        self.model = model
        self.optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=self.cfg.lr)

    # -- phases ----------------------------------------------------------------------------------
    def submit_job(
        self,
        run_id: str,
        model: str,
        *,
        subset: str | None,
        tasks: int | None,
        per_task: int,
        temperature: float,
        seed: int,
    ) -> None:
        """Submit a job to the rollout service and return at once (its episodes play on the workers, or in this
        process's threads); a job still running from a killed run is followed to its end and submitted again."""
        request = JobRequest(
            experiment=self.cfg.experiment,
            task_registry=self.cfg.dataset_path,
            subset=subset,
            sample_size=tasks,
            rollouts_per_task=per_task,
            seed=seed,
            task_seed=self.cfg.seed,
            temperature=temperature,
            run_id=run_id,
            model=model,
        )
        once_ended(partial(self.jobs.submit, request), partial(self.jobs.status, run_id))

    def wait(self, run_id: str) -> list:
        """Follow a submitted job to its end (a live bar) and return its episodes as stored; the job's replays (episodes
        the model server or the environment failed, played again: LORALOOP_EPISODE_RETRIES) are kept in `replays`."""
        self.replays[run_id] = follow(lambda: self.jobs.status(run_id)).retries
        return list(iter_episodes(self.store, run_prefix(self.cfg.experiment, run_id)))

    def learn_rates(self, episodes: list) -> None:
        """Remember each task's success rate in this group of episodes (the ones the policy played to an end)."""
        played = [(e.start.task_id, e.success) for e in episodes if e.end.status not in NOT_THE_POLICY]
        self.rates.update(last_rates(played))

    def draw_tasks(self, iteration: int) -> Draw:
        """The iteration's tasks from the difficulty pools, seeded by the iteration: the rates are rebuilt from the
        stored iterations first when the run goes on after a stop, so it draws what it drew before."""
        if not self.rates:
            for earlier in range(iteration):
                prefix = run_prefix(self.cfg.experiment, iteration_run_id(self.cfg, earlier))
                self.learn_rates(list(iter_episodes(self.store, prefix)))
        tasks = [t.index for t in shared_registry(self.cfg.dataset_path).select(self.cfg.subset)]
        return draw(tasks, self.rates, self.cfg.tasks_per_iteration, self.cfg.seed + iteration, pool_rules(self.cfg))

    def train(self, rows: list, tokens: int, iteration: int) -> dict:
        """One pass (or `--epochs`) over the rows (`tokens` in all); returns loss, steps, tokens/s and the ratio
        diagnostics."""
        from transformers import TrainingArguments

        per_pass, passes = layout_of(self.cfg)
        # unsloth's get_peft_model checkpoints its own way (use_gradient_checkpointing="unsloth"); the Trainer turns
        # checkpointing on but never off, so an iteration of short turns after a long one turns it off here
        checkpointing = not self.unsloth and checkpointing_for(self.cfg, rows)
        if not checkpointing and not self.unsloth:
            checkpointing_off(self.model)
        args = TrainingArguments(
            **{
                **common_args(self.cfg),
                "output_dir": str(self.out / "trainer"),
                "save_strategy": "no",
                "report_to": [],
                "remove_unused_columns": False,
                "disable_tqdm": True,
                "seed": self.cfg.seed + iteration,
                # one pass: the seeded order below; more: the Trainer shuffles each epoch (every row has a pass)
                "train_sampling_strategy": "sequential" if self.cfg.epochs <= 1 else "random",
                # the step's turns shared by the processes of `accelerate launch` (one in a plain process)
                "per_device_train_batch_size": per_pass,
                "gradient_accumulation_steps": passes,
                "gradient_checkpointing": checkpointing,  # the alias common_args sets
                "gradient_checkpointing_kwargs": {"use_reentrant": False},  # LoRA: the inputs need no grad
            }
        )
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        started = time.perf_counter()
        # the training order, seeded: the sampler is sequential, so the rows the first step trains on are known
        rows = random.Random(self.cfg.seed + iteration).sample(rows, len(rows))
        prox: list[list[float] | None] | None = None  # the proximal policy, before the first update (decoupled)
        if self.correction:
            masked_is = self.correction.rollout_rs is not None
            first = first_step_rows(len(rows), self.cfg.batch_size, self.cfg.epochs, world_size(), masked_is)
            prox = [None] * first
            prox += proximal_logprobs(self.model, rows[first:], self.fused)
        trainer = RLTrainer(
            model=self.model,
            args=args,
            train_dataset=as_dataset(rows, prox),
            data_collator=lambda batch: collate(batch, pad),
            optimizers=(self.optimizer, None),
            clip_eps=self.cfg.clip_eps,
            correction=self.correction,
            fused=self.fused,
            callbacks=[StepBar(f"train it{iteration}", console)],
        )
        trainer.train()
        seconds = time.perf_counter() - started
        logs = [h for h in trainer.state.log_history if "loss" in h]
        self.log_steps(logs)
        return {
            "steps": trainer.state.global_step,
            "loss": logs[-1]["loss"] if logs else None,
            "ratio_mean": logs[-1].get("ratio_mean") if logs else None,
            "clip_fraction": logs[-1].get("clip_fraction") if logs else None,
            **{  # the sampler/trainer mismatch at the iteration's last step (decoupled mode)
                short: logs[-1].get(f"rollout_corr/{name}") if logs else None
                for short, name in (("k3_kl", "k3_kl"), ("is_truncated", "rollout_is_ratio_fraction_high"))
            },
            "train_tokens_per_s": round(tokens * self.cfg.epochs / seconds, 1),
        }

    def publish(self, iteration: int, row: dict) -> int:
        """Save the adapter with the iteration's record and publish it as the next version; return its number."""
        folder = self.out / "adapter"
        self.model.save_pretrained(folder)
        self.tokenizer.save_pretrained(folder)
        save_trainer_logprobs(self.model, self.tokenizer, folder, self.cfg.dataset_path)  # publish checks vLLM by it
        (folder / "training_metrics.json").write_text(
            json.dumps(
                {
                    "algorithm": "rl",
                    "rl_iteration": iteration,
                    "base_model": self.cfg.base_model,
                    "dataset_path": self.cfg.dataset_path,
                    "lora_r": self.cfg.lora_r,
                    "row": row,
                },
                indent=2,
            )
        )
        return publish_version(self.settings, folder, self.cfg.adapter_name)

    def stored(self) -> list:
        """The episodes of `--from_run` (MODE/RUN_ID), as stored: the batch when nothing is rolled out here."""
        mode, _, run_id = (self.cfg.from_run or "").partition("/")
        return list(iter_episodes(self.store, run_prefix(mode, run_id)))

    def held_out(self, version: int) -> dict:
        """A version's held-out evaluation for its row: `held_out`, its greedy success over the held-out episodes the
        policy played (one lost to the model server or the environment after its replays is not the policy's: it is
        counted in `eval_errors`, not as a failure; None when none was played), and `eval_retries`, the episodes
        played again. Its episodes are kept by version, so a rerun reuses them. Empty without held-out evaluation
        (`--eval_every 0`, or `--from_run`: no registry to play)."""
        if not self.cfg.eval_every or self.cfg.from_run:
            return {}
        run_id = f"{self.cfg.adapter_name}-eval-v{version}"
        self.submit_job(
            run_id,
            self.served(version),
            subset=self.cfg.eval_subset,
            tasks=self.cfg.eval_tasks,
            per_task=1,
            temperature=0.0,
            seed=self.cfg.seed,
        )
        episodes = self.wait(run_id)
        played = [e for e in episodes if e.end.status not in NOT_THE_POLICY]
        return {
            "held_out": round(sum(e.success for e in played) / len(played), 4) if played else None,
            "eval_errors": len(episodes) - len(played),
            "eval_retries": self.replays.get(run_id, 0),
        }

    # -- the plan's stages (orchestrator.run_rl carries them out, each timed) ------------------------------
    def start(self) -> tuple[int, int]:
        """The version to sample with first and the last iteration done (-1: none): a run going on serves its last
        version again, a new one publishes its warm start as version 1; iteration 0's row (the start's held-out
        score) and a row lost to a kill after publishing are written here."""
        cfg, settings = self.cfg, self.settings
        version, done = self.published()
        if version:  # going on: the version to sample with is loaded again (a restarted vLLM lost it)
            serve_version(settings, cfg.adapter_name, adapters.version_name(version))
        elif cfg.init_adapter:  # the warm start becomes version 1, evaluated as iteration 0
            version = publish_version(settings, Path(cfg.init_adapter), cfg.adapter_name)
        if done >= 0 and not any(r["iteration"] == done + 1 for r in self.history):
            self.record(self.recovered_row(version))  # killed after publishing, before writing its row
        if done < 0 and not any(r["iteration"] == 0 for r in self.history):
            started = time.perf_counter()
            self.record(
                {
                    "iteration": 0,
                    "sampled_with": None,
                    "version": self.served(version),
                    **self.held_out(version),
                    "eval_s": round(time.perf_counter() - started, 1),
                }
            )
        return version, done

    def announce(self, iteration: int, version: int) -> None:
        """The iteration's rule on the console: its number and what it samples with."""
        cfg = self.cfg
        console.rule(
            f"iteration {iteration + 1}/{cfg.iterations}: "
            + (f"stored episodes of {cfg.from_run}" if cfg.from_run else f"rollouts by {self.served(version)}")
        )

    def submit(self, iteration: int, version: int) -> Ahead:
        """Submit the iteration's rollouts, sampled by `version`, and return at once: what `collect` waits for."""
        cfg = self.cfg
        pools: Draw | None = None
        subset: str | None = cfg.subset
        tasks: int | None = cfg.tasks_per_iteration  # None once the draw names the tasks
        if cfg.sampler == "difficulty-pool":
            pools = self.draw_tasks(iteration)
            subset, tasks = "+".join(filter(None, [cfg.subset, ",".join(f"id:{t}" for t in pools.tasks)])), None
        run_id = iteration_run_id(cfg, iteration)
        self.submit_job(
            run_id,
            self.served(version),
            subset=subset,
            tasks=tasks,
            per_task=cfg.rollouts_per_task,
            temperature=cfg.temperature,
            seed=cfg.seed + iteration,
        )
        return Ahead(iteration, run_id, version, pools)

    def collect(self, job: Ahead | None) -> tuple[list, Ahead | None]:
        """The rollout stage: the episodes of the iteration's job (submitted by `ahead`, this iteration's or an
        earlier one's) and the job, or the stored run of `--from_run` and None (nothing is rolled out)."""
        if self.cfg.from_run or job is None:
            return self.stored(), None
        episodes = self.wait(job.run_id)
        self.learn_rates(episodes)
        return episodes, job

    def ahead(self, iteration: int, version: int, pending: dict[int, Ahead]) -> dict[int, Ahead]:
        """The rollout jobs out from now on, by iteration: this iteration's and, in asynchronous mode, the next K
        iterations' (`iterations_ahead`); those not in `pending` (submitted by an earlier iteration) are submitted
        now, in iteration order, sampled by `version`, the newest, so that the rollout device goes from this
        iteration's episodes straight on to the next ones' (the first iteration's included: nothing waits for its
        episodes to be collected) and they play while this iteration trains. Empty with `--from_run` (nothing is
        rolled out)."""
        if self.cfg.from_run:
            return {}
        due = [iteration, *iterations_ahead(iteration, staleness(self.cfg), self.cfg.iterations)]
        return {later: pending.get(later) or self.submit(later, version) for later in due}

    def learn(self, episodes: list, iteration: int, version: int, job: Ahead | None) -> tuple[dict, bool]:
        """The train stage: the episodes (of `job`, sampled by its version) become the batch for `version`, the one
        trained (token-exact rows, group-relative advantages; episodes older than K versions dropped), trained on
        when it has rows; returns the iteration's row so far and whether anything was trained."""
        cfg = self.cfg
        rows, batch = build_batch(
            episodes,
            version=version,
            max_staleness=staleness(cfg),
            scale_rewards=cfg.scale_rewards,
            max_length=cfg.max_length,
        )
        stats = batch.as_dict()
        trained = self.train(rows, stats["tokens"], iteration) if rows else {"steps": 0}
        sampled_with = self.served(job.version if job else version)
        row = {"iteration": iteration + 1, "sampled_with": sampled_with, **stats, **trained, "skipped": skipped(stats)}
        row["retries"] = self.replays.get(job.run_id, 0) if job else 0  # episodes played again (errored: given up)
        if job is not None and job.pools is not None:
            row["pools"] = job.pools.summary()
        return row, bool(rows)

    def publish_trained(self, iteration: int, row: dict) -> int:
        """The publish stage: the trained adapter becomes the next version, the older ones retired (in sync mode the
        rollout job is over: no request in flight uses them; in async mode the next iteration's job may still
        sample with the K versions before, which stay); returns it."""
        version = self.publish(iteration, row)
        # the versions rollouts may still sample: the newest, and in async mode those the next iteration's job uses
        retire(self.settings, self.cfg.adapter_name, keep=staleness(self.cfg) + 1)
        return version

    def eval_due(self, iteration: int) -> bool:
        """Whether the iteration ends with a held-out evaluation (`--eval_every`)."""
        return bool(self.cfg.eval_every) and (iteration + 1) % self.cfg.eval_every == 0

    def close_iteration(self, row: dict) -> None:
        """Record the iteration's row and say on the console what it did."""
        self.record(row)
        console.print(
            f"iteration {row['iteration']}: success {row['success_rate']:.0%}, reward "
            f"{row['mean_reward']:.3f}, {row['rows']} rows / {row['sampled_tokens']} sampled tokens"
            + (f", held-out {row['held_out']:.0%}" if row.get("held_out") is not None else "")
            + (f"; skipped: {row['skipped']}" if row["skipped"] else "")
            + f" -> {row['version']}"
        )

    def result(self, version: int) -> dict:
        """What `train rl` returns: the history, where the report and curve are, the adapter served last, the
        config."""
        return {
            "history": self.history,
            "report": str(self.out / "rl_report.md"),
            "curve": str(self.out / "rl_curve.png"),
            "adapter": self.served(version),
            "config": asdict(self.cfg),
        }

    # -- records ---------------------------------------------------------------------------------
    def recovered_row(self, version: int) -> dict:
        """The row of the iteration that published `version`, rebuilt from the version's metadata (its
        publish time unknown) with its held-out evaluation run again where it was due."""
        meta = adapters.read_metadata(self.store, self.cfg.adapter_name, adapters.version_name(version))
        row = {**meta["training_metrics"]["row"], "version": self.served(version)}
        if self.cfg.eval_every and row["iteration"] % self.cfg.eval_every == 0:
            row.update(self.held_out(version))
        return row

    def log_steps(self, logs: list[dict]) -> None:
        """Training steps into TensorBoard, numbered across iterations."""
        writer = self.writer()
        for entry in logs:
            self.trained_steps += 1
            for name, value in entry.items():  # loss, grad_norm, the ratio's and the rollout correction's metrics
                if isinstance(value, (int, float)) and name not in ("epoch", "step", "learning_rate"):
                    writer.add_scalar(name if "/" in name else f"train/{name}", value, self.trained_steps)
        writer.flush()

    def writer(self):
        """The run's TensorBoard writer (under output_dir/tensorboard)."""
        if self._writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self._writer = SummaryWriter(str(self.out / "tensorboard"))
        return self._writer

    def record(self, row: dict) -> None:
        """Keep an iteration's row: history file, TensorBoard, report and curve, all rewritten now."""
        self.history = [r for r in self.history if r["iteration"] != row["iteration"]] + [row]
        self.history.sort(key=lambda r: r["iteration"])
        tmp = self.out / "rl_history.json.tmp"
        tmp.write_text(json.dumps(self.history, indent=2))
        tmp.replace(self.out / "rl_history.json")
        writer = self.writer()
        for name in ("mean_reward", "success_rate"):
            if row.get(name) is not None:
                writer.add_scalar(f"rollout/{name}", row[name], row["iteration"])
        if row.get("held_out") is not None:
            writer.add_scalar("eval/held_out_success", row["held_out"], row["iteration"])
        writer.flush()
        write_report(self.history, self.out, self.cfg)


COLUMNS = (
    "iteration",
    "sampled_with",
    "episodes",
    "success_rate",
    "mean_reward",
    "held_out",
    "rows",
    "sampled_tokens",
    "skipped",
    "errored",
    "retries",
    "eval_errors",
    "eval_retries",
    "pools",
    "rollout_s",
    "train_s",
    "publish_s",
    "eval_s",
)


def write_report(history: list[dict], out: Path, cfg: RLConfig) -> None:
    """rl_report.md (one row per iteration) and rl_curve.png (train and held-out success by iteration)."""
    if cfg.from_run:
        head = [
            f"# RL run `{cfg.adapter_name}` on the stored episodes of {cfg.from_run}",
            "",
            "Episodes played elsewhere (e.g. recorded by the gateway), grouped by task; no held-out evaluation.",
        ]
    else:
        head = [
            f"# RL run `{cfg.adapter_name}` on {cfg.dataset_path}",
            "",
            f"{cfg.rollouts_per_task} rollouts on each of {cfg.tasks_per_iteration} tasks per iteration "
            f"(subset {cfg.subset}), temperature {cfg.temperature}; held-out: {cfg.eval_subset}, greedy.",
        ]
    if cfg.sampler == "difficulty-pool" and not cfg.from_run:
        head.append(
            f"Tasks drawn from difficulty pools (pools: drawn/held; easy: a last group solved at {cfg.easy_border:.0%} "
            f"or more, hard: at {cfg.hard_border:.0%} or less; an iteration's shares of them {cfg.easy_fraction:.0%} "
            f"and {cfg.hard_fraction:.0%})."
        )
    columns = [c for c in COLUMNS if c != "pools" or any("pools" in row for row in history)]
    lines = [*head, "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in history:
        lines.append("| " + " | ".join("" if row.get(c) is None else str(row.get(c)) for c in columns) + " |")
    (out / "rl_report.md").write_text("\n".join(lines) + "\n")
    rl_curve(
        [r["iteration"] for r in history],
        [r.get("success_rate") for r in history],
        [r.get("held_out") for r in history],
        out / "rl_curve.png",
        f"RL: {cfg.adapter_name}",
    )


def skipped(stats: dict) -> str:
    """What an iteration could not train on, in a few words (empty when nothing)."""
    parts = [
        f"{stats[k]} {label}"
        for k, label in (
            ("errored", "errors"),
            ("stale", "stale"),
            ("no_token_ids", "no ids"),
            ("equal_groups", "equal groups"),
            ("too_long", "too long"),
        )
        if stats.get(k)
    ]
    return ", ".join(parts)


@dataclass(frozen=True)
class Ahead:
    """An iteration's rollout job, submitted: its run id, the version that samples it (the newest when it was
    submitted) and the difficulty pools' draw it plays."""

    iteration: int
    run_id: str
    version: int
    pools: Draw | None


def iterations_ahead(iteration: int, k: int, iterations: int) -> range:
    """The iterations whose rollout jobs are out while `iteration` trains: the next K of the run's (none in sync mode,
    K = 0). A job submitted now is sampled by the version this iteration trains from, and the version its own
    iteration trains is at most K newer (one per iteration in between), so no episode of it is dropped as stale.
    Why K deep rather than one: the rollout device keeps playing through an iteration that has nothing to train (all
    its groups constant), where a pipeline one deep leaves the next iteration waiting for its whole rollout
    (bench/results/rl_async.md, 2026-11-28); AReaL bounds its rollouts' lead the same way (`max_head_offpolicyness`)."""
    return range(iteration + 1, min(iteration + k, iterations - 1) + 1)


def staleness(cfg: RLConfig) -> int:
    """K, the versions an episode may lag the one being trained: `--max_staleness`, or 1 with `--async` alone. K >= 1
    is asynchronous mode."""
    return cfg.max_staleness or int(cfg.async_rollouts)


def iteration_run_id(cfg: RLConfig, iteration: int) -> str:
    """The run id an iteration's rollout episodes are stored under."""
    return f"{cfg.adapter_name}-it{iteration:04d}"
