"""One turn of the loop on this machine, each stage timed: teacher rollouts → BC export → LoRA →
publish to vLLM → eval base vs adapter. `loraloop demo` runs it once on the train/test splits;
`loraloop loop` runs it for several training seeds and reports mean and spread."""
from __future__ import annotations

import json
import statistics
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from loraloop.datasets.export import export
from loraloop.envs.shell import docker
from loraloop.errors import ServiceUnavailable
from loraloop.evaluate.report import write_report
from loraloop.models.prepare import prepare
from loraloop.rollout.experiments import get_experiment
from loraloop.rollout.runner import execute
from loraloop.rollout.sampler import new_run_id, plan_rollout
from loraloop.serve import vllm_server
from loraloop.serve.publish import publish
from loraloop.settings import Settings
from loraloop.store import open_store
from loraloop.tasks.registry import load_registry
from loraloop.train.bc import train_bc
from loraloop.train.config import BCConfig

console = Console(stderr=True)


@dataclass
class LoopPlan:
    """What one turn of the loop trains on and is judged on."""

    registry: str = "configs/tasks/os"
    train_subset: str = "train"
    test_subset: str = "test"
    epochs: float = 2.0
    lr: float = 2e-4
    seed: int = 42
    eval_rollouts: int = 1
    eval_temperature: float | None = None
    adapter: str = "smollm_bc"


@contextmanager
def _vllm(settings: Settings):
    """The model server: reuse a running one, else start it and stop it after."""
    started = not vllm_server.is_ready(settings.vllm_url)
    vllm_server.start(settings)
    try:
        yield
    finally:
        if started:
            vllm_server.stop(settings.vllm_port)


def run_turn(settings: Settings, out: Path, plan: LoopPlan) -> dict:
    """One turn, every stage timed; writes report.md, success.png and summary.json under `out`."""
    stages: dict[str, float] = {}

    @contextmanager
    def stage(name: str):
        console.rule(f"[bold]{name}")
        started = time.perf_counter()
        yield
        stages[name] = round(time.perf_counter() - started, 1)
        console.print(f"[green]{name}[/]: {stages[name]} s")

    if not docker.image_exists(settings.os_env_image):
        raise ServiceUnavailable(f"image {settings.os_env_image} is missing: run 'make images'")
    run = new_run_id()
    out.mkdir(parents=True, exist_ok=True)
    registry = load_registry(plan.registry)
    store = open_store(settings=settings)

    def rollout(name: str, subset: str, attempts: int, temperature: float | None, model: str | None) -> None:
        specs = plan_rollout(registry, plan.registry, get_experiment(settings.experiments_path, name), run_id=run,
                             subset=subset, sample_size=None, rollouts_per_task=attempts, seed=plan.seed,
                             task_seed=123, temperature=temperature, model=model)
        execute(specs, settings)

    with stage("prepare model"):
        prepare("smollm2-135m", Path(settings.model_dir))
    with ExitStack() as server:
        with stage("start vLLM"):
            server.enter_context(_vllm(settings))
        with stage("teacher rollouts"):
            rollout("teacher", plan.train_subset, 1, None, None)
        with stage("export BC dataset"):
            manifest = export(store, f"trajectories/teacher/{run}", out / "datasets", ["bc"],
                              char_budget=settings.prompt_char_budget)
        with stage("train BC LoRA"):
            metrics = train_bc(BCConfig(base_model=str(settings.model_dir), dataset_path=str(out / "datasets/bc.jsonl"),
                                        output_dir=str(out / "bc_lora"), epochs=plan.epochs, lr=plan.lr,
                                        seed=plan.seed))
        with stage("publish adapter to vLLM"):
            published = publish(settings, out / "bc_lora", plan.adapter)
        with stage("eval base vs adapter"):
            rollout("smollm_zero", plan.test_subset, plan.eval_rollouts, plan.eval_temperature, None)
            rollout("smollm_bc", plan.test_subset, plan.eval_rollouts, plan.eval_temperature, plan.adapter)
            md, rows = write_report(store, [("smollm_zero", run), ("smollm_bc", run)], out,
                                    f"SmolLM2-135M base vs BC LoRA on {plan.test_subset} (seed {plan.seed})")
    summary = {"run_id": run, "plan": plan.__dict__, "stages_s": stages, "total_s": round(sum(stages.values()), 1),
               "dataset": {k: manifest[k] for k in ("episodes", "rows")}, "training": metrics,
               "adapter": {k: published[k] for k in ("name", "version", "store_key")},
               "results": {r.experiment: {"success_rate": r.success_rate, "solved": r.solved,
                                          "episodes": r.episodes, "median_steps": r.median_steps} for r in rows}}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    with md.open("a") as handle:
        handle.write("\n## Stages\n\n| Stage | Seconds |\n|---|---:|\n")
        handle.writelines(f"| {k} | {v} |\n" for k, v in stages.items())
        handle.write(f"\nTraining: {metrics['rows']} rows, loss {metrics['first_loss']} → {metrics['final_loss']}, "
                     f"{metrics['tokens_per_s']} tokens/s ({metrics['backend']}); loss curve: bc_lora/loss.png\n")
    return summary


def run_demo(settings: Settings, out: Path, epochs: float) -> Path:
    """`loraloop demo`: one turn on the train and test splits; prints the report and its path."""
    out = out / new_run_id()
    run_turn(settings, out, LoopPlan(epochs=epochs))
    report = out / "report.md"
    console.print(report.read_text())
    console.print(f"[bold green]report:[/] {report.resolve()}")
    return report


def run_loop(settings: Settings, out: Path, plan: LoopPlan, seeds: list[int]) -> Path:
    """`loraloop loop`: one turn per training seed, then base vs adapter success as mean ± sd over seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = out / new_run_id()
    with _vllm(settings):  # one server for every turn
        turns = [run_turn(settings, out / f"seed-{seed}", LoopPlan(**{**plan.__dict__, "seed": seed}))
                 for seed in seeds]
    rates = {name: [t["results"][name]["success_rate"] for t in turns] for name in ("smollm_zero", "smollm_bc")}
    episodes = {name: sum(t["results"][name]["episodes"] for t in turns) for name in rates}
    lines = [f"# Learning over {len(seeds)} seeds: BC on `{plan.train_subset}`, eval on `{plan.test_subset}`", "",
             "| Model | " + " | ".join(f"seed {s}" for s in seeds) + " | mean | sd | episodes |",
             "|---|" + "---:|" * (len(seeds) + 3)]
    for name, values in rates.items():
        spread = statistics.stdev(values) if len(values) > 1 else 0.0
        lines.append(f"| `{name}` | " + " | ".join(f"{v:.1%}" for v in values)
                     + f" | {statistics.mean(values):.1%} | {spread:.1%} | {episodes[name]} |")
    lines += ["", f"Epochs {plan.epochs}, lr {plan.lr}, {plan.eval_rollouts} eval rollout(s) per task at "
              f"temperature {plan.eval_temperature if plan.eval_temperature is not None else 'of the experiment'}; "
              "per-seed reports in seed-*/report.md.", "", "![success](learning.png)"]
    report = out / "report.md"
    report.write_text("\n".join(lines) + "\n")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    means = [statistics.mean(v) for v in rates.values()]
    errs = [statistics.stdev(v) if len(v) > 1 else 0.0 for v in rates.values()]
    ax.bar(list(rates), means, yerr=errs, capsize=6, color=["#999999", "#2a7ae2"])
    ax.set_ylim(0, 1)
    ax.set_ylabel("test success rate (mean ± sd)")
    ax.set_title(f"{len(seeds)} seeds")
    fig.tight_layout()
    fig.savefig(out / "learning.png", dpi=120)
    plt.close(fig)
    (out / "summary.json").write_text(json.dumps({"seeds": seeds, "rates": rates, "turns": turns}, indent=2))
    console.print(report.read_text())
    console.print(f"[bold green]report:[/] {report.resolve()}")
    return report
