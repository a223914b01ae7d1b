"""The loop's orchestrator: it carries out the plans, stage by stage, each stage timed.

- The loop's turn: teacher rollouts → BC export → LoRA → publish to vLLM → eval base vs adapter. A `LoopPlan`
  holds what a run does (tasks, experiments, training, seeds); `run` carries it out. `loraloop demo` runs
  `demo_plan()`: one turn on three task families, trained on their train variants and judged on their held-out
  test variants, sized for a 2-core CPU; `loraloop loop` plans one turn per training seed on a task family and
  reports mean and spread.
- `loraloop train rl`: an `RLConfig` is the plan, `run_rl` carries it out: its start, then each iteration's
  stages, rollout → train → publish → eval, timed the same way into the iteration's row (rl_loop.RLRun does
  each stage's work).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

from rich.console import Console, Group
from rich.table import Table

from loraloop.datasets.export import export
from loraloop.defaults import SEED, TASK_REGISTRY, TASK_SEED
from loraloop.errors import ConfigError
from loraloop.evaluate.report import viewer_address, write_learning_report, write_report
from loraloop.kinds.registry import env_kind
from loraloop.models.prepare import prepare
from loraloop.rl_loop import Ahead, RLRun, check_config
from loraloop.rollout.experiments import get_experiment
from loraloop.rollout.sampler import new_run_id, plan_rollout
from loraloop.serve import vllm_server
from loraloop.serve.publish import publish
from loraloop.service.client import execute
from loraloop.settings import Settings, get_settings
from loraloop.store import open_store
from loraloop.task_registry import load_registry
from loraloop.train.bc import train_bc
from loraloop.train.config import BCConfig, RLConfig

console = Console(stderr=True)


@dataclass(frozen=True)
class LoopPlan:
    """What a run of the loop does: the model, the tasks it trains and is judged on, the experiments
    (configs/experiments.yaml) that play the teacher, the base and the adapter, training, and the seeds."""

    model: str = "smollm2-135m"  # `loraloop models prepare` name of the base model
    registry: str = TASK_REGISTRY
    train_subset: str = "train"
    test_subset: str = "test"
    teacher: str = "teacher"  # collects the demonstrations BC trains on
    base: str = "smollm_zero"  # the base model, evaluated as is
    tuned: str = "smollm_bc"  # the base model with the adapter, evaluated after publishing
    adapter: str = "smollm_bc"  # name the adapter is published (and served) under
    epochs: float = 2.0
    lr: float = 2e-4
    batch_size: int = 4
    whole_episodes: bool = False  # BC on one sequence per episode (train/episode_rows.py), not one per turn
    seeds: tuple[int, ...] = (SEED,)  # one turn per training seed (also the task sampling seed)
    task_seed: int = TASK_SEED
    eval_rollouts: int = 1
    eval_temperature: float | None = None  # None: the experiment's own
    eval_max_steps: int | None = None  # None: the experiment's own
    max_tokens: int | None = None  # longest model reply in the eval; None: LORALOOP_MAX_TOKENS
    request_timeout_s: float | None = None  # the eval's client timeout per request; None: LORALOOP_REQUEST_TIMEOUT_S

    def __post_init__(self) -> None:
        """Reject a plan that cannot run, naming the value."""
        if not self.seeds:
            raise ConfigError("loop plan: seeds is empty (give at least one training seed)")
        if self.epochs <= 0 or self.lr <= 0:
            raise ConfigError(f"loop plan: epochs and lr must be positive, got epochs={self.epochs}, lr={self.lr}")
        if self.eval_rollouts < 1:
            raise ConfigError(f"loop plan: eval_rollouts must be at least 1, got {self.eval_rollouts}")
        for name in ("batch_size", "eval_max_steps", "max_tokens", "request_timeout_s"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ConfigError(f"loop plan: {name} must be positive, got {value}")

    def eval_settings(self, settings: Settings) -> Settings:
        """The settings the plan's evaluations run with: its reply length and client timeout where it sets them."""
        limits = {"max_tokens": self.max_tokens, "request_timeout_s": self.request_timeout_s}
        return settings.model_copy(update={k: v for k, v in limits.items() if v is not None})

    def rl_config(self, settings: Settings, folder: Path, **fields) -> RLConfig:
        """`loraloop train rl` from the BC adapter a turn left in folder/bc_lora: on the plan's train tasks, its
        held-out tasks the test subset, run state in folder/rl; `fields` set the rest of RLConfig (output_dir
        among them: several RL runs from one warm start)."""
        return RLConfig(
            **{
                "base_model": str(settings.model_dir),
                "dataset_path": self.registry,
                "subset": self.train_subset,
                "eval_subset": self.test_subset,
                "init_adapter": str(folder / "bc_lora"),
                "output_dir": str(folder / "rl"),
                **fields,
            }
        )


DEMO_FAMILIES = ("count-ext", "grep-count", "config-value")
# What a turn leaves under its folder for people to read (the README promises them): the report, its table
# as CSV, the success chart and the training loss curve.
ARTIFACTS = ("report.md", "report.csv", "success.png", "bc_lora/loss.png")


def demo_plan(epochs: float = 3.0, registry: str = TASK_REGISTRY) -> LoopPlan:
    """`loraloop demo`: BC on the train variants of three parameterised task families (DEMO_FAMILIES, 20
    teacher episodes), eval of base and adapter on their 10 held-out test variants, sized to end within 15
    minutes on a 2-core CPU: whole-episode BC sequences (half the tokens of one row per turn), 4 rounds and
    80-token replies in the eval (the adapter answers in 2 rounds of under 60 tokens; the base model,
    which never solves these, is not left to use 8 rounds of 192 tokens), and a client timeout that a full
    batch of such replies on a busy 2-core CPU stays far below."""
    families = ",".join(f"family:{name}" for name in DEMO_FAMILIES)
    return LoopPlan(
        registry=registry,
        train_subset=f"train+{families}",
        test_subset=f"test+{families}",
        epochs=epochs,
        lr=5e-4,
        batch_size=2,
        whole_episodes=True,
        eval_max_steps=4,
        max_tokens=80,
        request_timeout_s=300.0,
    )


@contextmanager
def vllm_serving(settings: Settings):
    """The model server: reuse a running one, else start it and stop it after."""
    started = not vllm_server.is_ready(settings.vllm_url)
    vllm_server.start(settings)
    try:
        yield
    finally:
        if started:
            vllm_server.stop(settings.vllm_port)


@contextmanager
def timed(stages: dict[str, float], name: str) -> Iterator[None]:
    """A stage's wall time in seconds into `stages[name]` (rounded to 0.1 s), taken whether it ends or raises."""
    started = time.perf_counter()
    try:
        yield
    finally:
        stages[name] = round(time.perf_counter() - started, 1)


@contextmanager
def timed_stage(stages: dict[str, float], name: str) -> Iterator[None]:
    """A stage of a turn: its rule on the console, then its wall time in seconds into `stages` and on the console."""
    console.rule(f"[bold]{name}")
    with timed(stages, name):
        yield
    console.print(f"[green]{name}[/]: {stages[name]} s")


def run_turn(settings: Settings, out: Path, plan: LoopPlan, seed: int, server: ExitStack) -> dict:
    """One turn with training seed `seed`, every stage timed; writes report.md, success.png and summary.json
    under `out`. vLLM joins `server`, so a run's turns share one server."""
    stages: dict[str, float] = {}
    stage = partial(timed_stage, stages)
    registry = load_registry(plan.registry)
    tasks = registry.select(plan.train_subset) + registry.select(plan.test_subset)
    for kind in sorted({task.env for task in tasks}):  # what each kind needs (the shell's image), before vLLM
        env_kind(kind).envs.preflight([task for task in tasks if task.env == kind], settings)
    run = new_run_id()
    out.mkdir(parents=True, exist_ok=True)
    store = open_store(settings=settings)

    eval_settings = plan.eval_settings(settings)

    def rollout(name: str, subset: str, attempts: int, temperature: float | None, model: str | None) -> None:
        experiment = get_experiment(settings.experiments_path, name)
        evaluating = name != plan.teacher
        if evaluating and plan.eval_max_steps is not None:
            experiment = experiment.model_copy(update={"max_steps": plan.eval_max_steps})
        specs = plan_rollout(
            registry,
            plan.registry,
            experiment,
            run_id=run,
            subset=subset,
            sample_size=None,
            rollouts_per_task=attempts,
            seed=seed,
            task_seed=plan.task_seed,
            temperature=temperature,
            model=model,
        )
        execute(specs, eval_settings if evaluating else settings)

    with stage("prepare model"):
        prepare(plan.model, Path(settings.model_dir))
    with stage("start vLLM"):
        server.enter_context(vllm_serving(settings))
    with stage("teacher rollouts"):
        rollout(plan.teacher, plan.train_subset, 1, None, None)
    with stage("export BC dataset"):
        manifest = export(
            store,
            f"trajectories/{plan.teacher}/{run}",
            out / "datasets",
            ["bc"],
            char_budget=settings.prompt_char_budget,
        )
    with stage("train BC LoRA"):
        metrics = train_bc(
            BCConfig(
                base_model=str(settings.model_dir),
                dataset_path=str(out / "datasets/bc.jsonl"),
                output_dir=str(out / "bc_lora"),
                epochs=plan.epochs,
                lr=plan.lr,
                seed=seed,
                batch_size=plan.batch_size,
                whole_episodes=plan.whole_episodes,
            )
        )
    with stage("publish adapter to vLLM"):
        published = publish(settings, out / "bc_lora", plan.adapter)
    with stage("eval base vs adapter"):
        rollout(plan.base, plan.test_subset, plan.eval_rollouts, plan.eval_temperature, None)
        rollout(plan.tuned, plan.test_subset, plan.eval_rollouts, plan.eval_temperature, plan.adapter)
        md, rows = write_report(
            store,
            [(plan.base, run), (plan.tuned, run)],
            out,
            f"{plan.base} vs {plan.tuned} (BC LoRA) on {plan.test_subset} (seed {seed})",
            viewer_address(settings),
        )
    return _write_summary(out, plan, seed, run, stages, manifest, metrics, published, rows, md)


def _write_summary(
    out: Path,
    plan: LoopPlan,
    seed: int,
    run: str,
    stages: dict[str, float],
    manifest: dict,
    metrics: dict,
    published: dict,
    rows: list,
    md: Path,
) -> dict:
    """A turn's summary.json (its plan, stage times, dataset, training, adapter and results) and the report's stage
    table and training line; returns the summary."""
    summary = {
        "run_id": run,
        "plan": asdict(plan),
        "seed": seed,
        "stages_s": stages,
        "total_s": round(sum(stages.values()), 1),
        "dataset": {k: manifest[k] for k in ("episodes", "rows")},
        "training": metrics,
        "adapter": {k: published[k] for k in ("name", "version", "store_key", "served_name")},
        "results": {
            r.experiment: {
                "success_rate": r.success_rate,
                "solved": r.solved,
                "episodes": r.episodes,
                "ci95": list(r.interval),
                "errors": r.errors,
                "median_steps": r.median_steps,
            }
            for r in rows
        },
        "artifacts": {name: str((out / name).resolve()) for name in ARTIFACTS if (out / name).is_file()},
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    with md.open("a") as handle:
        handle.write("\n## Stages\n\n| Stage | Seconds |\n|---|---:|\n")
        handle.writelines(f"| {k} | {v} |\n" for k, v in stages.items())
        handle.write(
            f"\nTraining: {metrics['rows']} rows, loss {metrics['first_loss']} → {metrics['final_loss']}, "
            f"{metrics['tokens_per_s']} tokens/s ({metrics['backend']}); loss curve: bc_lora/loss.png\n"
        )
    return summary


def _over_seeds(out: Path, plan: LoopPlan, turns: list[dict]) -> Path:
    """The report over a run's seeds: base vs adapter success per seed, mean ± sd; summary.json beside it."""
    names = (plan.base, plan.tuned)
    rates = {name: [t["results"][name]["success_rate"] for t in turns] for name in names}
    episodes = {name: sum(t["results"][name]["episodes"] for t in turns) for name in names}
    temperature = plan.eval_temperature if plan.eval_temperature is not None else "of the experiment"
    notes = (
        f"Epochs {plan.epochs}, lr {plan.lr}, {plan.eval_rollouts} eval rollout(s) per task at temperature "
        f"{temperature}; per-seed reports in seed-*/report.md."
    )
    report = write_learning_report(
        rates,
        episodes,
        list(plan.seeds),
        out,
        f"Learning over {len(plan.seeds)} seeds: BC on `{plan.train_subset}`, eval on `{plan.test_subset}`",
        notes,
    )
    (out / "summary.json").write_text(json.dumps({"plan": asdict(plan), "rates": rates, "turns": turns}, indent=2))
    return report


def run(settings: Settings, out: Path, plan: LoopPlan) -> Path:
    """Carry out the plan under out/<run_id>/ with one vLLM for all turns; print the report, return its path.

    One seed: the turn's own report. Several: a turn per seed in seed-<N>/ and a report over the seeds."""
    out = out / new_run_id()
    with ExitStack() as server:
        if len(plan.seeds) == 1:
            run_turn(settings, out, plan, plan.seeds[0], server)
            report = out / "report.md"
        else:
            turns = [run_turn(settings, out / f"seed-{seed}", plan, seed, server) for seed in plan.seeds]
            report = _over_seeds(out, plan, turns)
    console.print(report.read_text())
    summary = json.loads((out / "summary.json").read_text())
    console.print(closing_summary(plan, summary))
    console.print("artifacts:")
    for turn in summary.get("turns", [summary]):
        for path in turn["artifacts"].values():
            console.print(path, soft_wrap=True, highlight=False)
    console.print(f"[bold green]report:[/] {report.resolve()}", soft_wrap=True)
    return report


def closing_summary(plan: LoopPlan, summary: dict) -> Group:
    """What a run ends with on the terminal, read from its summary.json: base against adapter on the held-out
    tasks with 95% intervals (per seed) and each stage's wall time (`run` prints the artifacts' paths after it,
    unwrapped, so they can be copied)."""
    turns = summary.get("turns", [summary])
    results = Table(title=f"{plan.base} vs {plan.tuned} on held-out {plan.test_subset}", title_justify="left")
    for column in ("seed", plan.base, plan.tuned, "wall time (s)"):
        results.add_column(column, justify="left" if column == "seed" else "right")
    for turn in turns:
        cells = []
        for name in (plan.base, plan.tuned):
            r = turn["results"][name]
            low, high = r["ci95"]
            errors = f"; env/service errors: {r['errors']}" if r["errors"] else ""
            cells.append(
                f"{r['solved']}/{r['episodes']} = {r['success_rate']:.0%} (95% CI {low:.0%}–{high:.0%}{errors})"
            )
        results.add_row(str(turn["seed"]), *cells, str(turn["total_s"]))
    stages = Table(title="stages (s)", title_justify="left")
    stages.add_column("stage")
    for turn in turns:
        stages.add_column(f"seed {turn['seed']}", justify="right")
    for name in turns[0]["stages_s"]:
        stages.add_row(name, *(str(turn["stages_s"].get(name, "–")) for turn in turns))
    return Group(results, stages)


def run_rl(cfg: RLConfig, settings: Settings | None = None) -> dict:
    """`loraloop train rl`: run (or go on with) the RL plan until `cfg.iterations`; return the history and where
    the report is. Its start goes on after the last published version (or publishes the warm start); then each
    iteration is `rl_iteration` (asynchronous mode: `pending` holds the next K iterations' jobs, submitted during
    the ones before)."""
    settings = settings or get_settings()
    check_config(cfg, settings)
    run = RLRun(cfg, settings)
    if run.overlaps_in_process():
        console.print(
            "[yellow]asynchronous mode with the episodes in this process: they share its interpreter lock with "
            "training; rollout workers (LORALOOP_BROKER_URL and `loraloop worker`) keep them apart[/]"
        )
    version, done = run.start()
    run.load_policy(version)
    pending: dict[int, Ahead] = {}
    for iteration in range(done + 1, cfg.iterations):
        version, pending = rl_iteration(run, iteration, version, pending)
    return run.result(version)


def rl_iteration(run: RLRun, iteration: int, version: int, pending: dict[int, Ahead]) -> tuple[int, dict[int, Ahead]]:
    """One iteration's stages in order, each timed into its row (`rollout_s`, `train_s`, `publish_s`, `eval_s`):
    roll out (or read the stored run), build the batch and train, publish, evaluate when due; the row is recorded.
    In asynchronous mode (K >= 1) the rollouts of the next K iterations are out before this one's are collected
    (those not yet submitted are submitted now, after this iteration's own, sampled by the newest version: the one
    this iteration trains from, at most K versions behind the one their own iteration trains), and play while this
    one trains and publishes; `pending` holds the jobs earlier iterations submitted, this one's among them. Returns
    the version the next iteration samples with (the same one when there was nothing to train on) and the jobs out
    for the iterations after."""
    seconds: dict[str, float] = {}
    run.announce(iteration, version)
    following = run.ahead(iteration, version, pending)  # this iteration's job first, then the next K's
    with timed(seconds, "rollout_s"):
        episodes, job = run.collect(following.pop(iteration, None))
    began = time.time()
    with timed(seconds, "train_s"):
        row, trained = run.learn(episodes, iteration, version, job)
    row["train_window"] = [round(began, 3), round(time.time(), 3)]  # what the next rollouts overlap, async
    row.update(seconds)  # the published version's metadata keeps the row as it is now
    with timed(seconds, "publish_s"):
        if trained:
            version = run.publish_trained(iteration, row)
        else:  # nothing learnt: the next iteration samples the same version again
            console.print(
                f"[yellow]iteration {iteration + 1}: nothing to train on ({row['skipped']}); no new version[/]"
            )
    if trained and run.eval_due(iteration):
        with timed(seconds, "eval_s"):
            row.update(run.held_out(version))
    row.update(version=run.served(version), **seconds)
    run.close_iteration(row)
    return version, following
