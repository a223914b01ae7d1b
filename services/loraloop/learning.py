"""Learning on a benchmark: base → BC → BC+RL trained on its train split and judged on its held-out split,
over training seeds, in one resumable run (`loraloop agentbench`, `make agentbench`).

The stages are the loop's own parts, each timed: teacher episodes on the train split (`rollout`, the
scripted teacher), the BC dataset (`export`), a LoRA per seed (`train bc`), published to vLLM, online RL
from it (`train rl`, rl_loop.py), and greedy evaluations of base, BC and BC+RL on the held-out
split with one experiment (its protocol, round limit and reply length), so the three differ only in the
weights. The report has the learning table (mean ± sd over seeds), Wilson intervals, paired McNemar tests
between each pair, success per task family, the most common failure modes of BC+RL, the stage times and
links to every held-out episode in the viewer.

A run lives in one folder (`--out`): the store's run ids are fixed by the plan's name and seed, training
writes where it is found again, and `progress.json` records the stages done, so a run started again goes
on where it stopped. The teacher episodes, the BC dataset and the base model's evaluation do not depend on
the training seed (the teacher is scripted, evaluation is greedy): they are made once and shared.
"""

from __future__ import annotations

import json
import os
import platform
import re
import time
from collections import Counter, defaultdict
from contextlib import ExitStack, contextmanager
from dataclasses import asdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from loraloop.charts import family_chart, learning_chart, success_chart
from loraloop.datasets.export import export
from loraloop.envs.web.prompts import ERROR_HEADING
from loraloop.errors import ConfigError
from loraloop.evaluate.report import (
    Row,
    episodes_url,
    markdown_table,
    mean_sd,
    paired_table,
    summary_row,
    viewer_address,
    write_csv,
)
from loraloop.hardware import choose_dtype, cpu_has_bf16
from loraloop.kinds.registry import env_kind
from loraloop.learning_config import LearningPlan
from loraloop.models.prepare import prepare
from loraloop.orchestrator import run_rl, vllm_serving
from loraloop.rollout.experiments import get_experiment
from loraloop.rollout.sampler import plan_rollout
from loraloop.serve.publish import publish, serve_version
from loraloop.service.client import execute
from loraloop.settings import Settings
from loraloop.store import adapters, open_store
from loraloop.store.browse import run_index
from loraloop.store.trajectories import iter_episodes, run_prefix
from loraloop.task_registry import Registry, load_registry
from loraloop.train.bc import train_bc
from loraloop.train.config import BCConfig, RLConfig

console = Console(stderr=True)
MODELS = ("base", "BC", "BC+RL")
TRANSFER = "-transfer"  # the run id suffix of an evaluation on the plan's transfer subset


TOP_FAILURES = 10
BC_SAVE_STEPS = 20  # BC takes 15 s a step on the 2-core VM (MiniWoB: 196 steps): a stop loses at most 5 minutes


def check_split(registry: Registry, plan: LearningPlan) -> tuple[int, int]:
    """(train tasks, held-out tasks): fails naming a task in both (nothing held out, for transfer either, may be
    trained on)."""
    train = {t.index for t in registry.select(plan.train_subset)}
    held = {subset: {t.index for t in registry.select(subset)} for subset in plan.subsets()[1:]}
    for subset, indexes in held.items():
        both = sorted(train & indexes)
        if both:
            raise ConfigError(
                f"{plan.task_registry}: {len(both)} task(s) of the held-out subset {subset!r} are in the train "
                f"subset {plan.train_subset!r} too (first: {both[0]}): a held-out task is never trained on"
            )
    return len(train), len(held[plan.heldout_subset])


class Progress:
    """The stages done and their wall times, in <out>/progress.json: a run started again skips them."""

    def __init__(self, out: Path) -> None:
        self.path = out / "progress.json"
        self.stages: dict[str, float] = json.loads(self.path.read_text()) if self.path.is_file() else {}

    @contextmanager
    def stage(self, name: str):
        """Run the body unless the stage is done; record its wall time once it returns."""
        console.rule(f"[bold]{name}")
        if name in self.stages:
            console.print(f"[dim]{name}: done before ({self.stages[name]} s)[/]")
            yield False
            return
        started = time.perf_counter()
        yield True
        self.stages[name] = round(time.perf_counter() - started, 1)
        self.path.write_text(json.dumps(self.stages, indent=2))
        console.print(f"[green]{name}[/]: {self.stages[name]} s")


def _served(settings: Settings, folder: Path, name: str) -> str:
    """The served name of the adapter in `folder` published as `name`: its newest stored version loaded again
    (a run going on with a restarted vLLM), else published now."""
    store = open_store(settings=settings)
    known = adapters.versions(store, name)
    if known:
        serve_version(settings, name, adapters.version_name(known[-1]))
        return adapters.served_name(name, adapters.version_name(known[-1]))
    return publish(settings, folder, name)["served_name"]


def run_learning(settings: Settings, out: Path, plan: LearningPlan) -> Path:
    """Carry out the plan in `out` (going on where an earlier run there stopped); return report.md's path."""
    out.mkdir(parents=True, exist_ok=True)
    registry = load_registry(plan.task_registry)
    train_count, held_count = check_split(registry, plan)
    console.print(f"{plan.task_registry}: {train_count} train tasks, {held_count} held out")
    (out / "plan.json").write_text(json.dumps(asdict(plan), indent=2))
    progress = Progress(out)
    store = open_store(settings=settings)
    evaluating = settings.model_copy(update={"max_tokens": plan.max_tokens})

    def rollout(
        experiment_name: str, run_id: str, subset: str, sample: int | None, model: str | None, rollouts: int
    ) -> None:
        experiment = get_experiment(settings.experiments_path, experiment_name)
        if model is not None and plan.eval_max_steps is not None:
            experiment = experiment.model_copy(update={"max_steps": plan.eval_max_steps})
        specs = plan_rollout(
            registry,
            plan.task_registry,
            experiment,
            run_id=run_id,
            subset=subset,
            sample_size=sample,
            rollouts_per_task=rollouts,
            seed=plan.task_seed,
            task_seed=plan.task_seed,
            temperature=None,
            model=model,
        )
        execute(specs, evaluating if model is not None else settings)

    tasks = [t for subset in plan.subsets() for t in registry.select(subset)]
    for kind in sorted({task.env for task in tasks}):
        env_kind(kind).envs.preflight([task for task in tasks if task.env == kind], settings)
    with ExitStack() as server:
        with progress.stage("prepare model") as due:
            if due:
                prepare(plan.model, Path(settings.model_dir))
        server.enter_context(vllm_serving(settings))
        with progress.stage("teacher episodes") as due:
            if due:
                rollout(
                    plan.teacher,
                    plan.run_id("teacher"),
                    plan.train_subset,
                    plan.teacher_tasks or None,
                    None,
                    plan.teacher_rollouts,
                )
        with progress.stage("export BC dataset") as due:
            if due:
                export(
                    store,
                    run_prefix(plan.teacher, plan.run_id("teacher")).rstrip("/"),
                    out / "datasets",
                    ["bc"],
                    char_budget=settings.prompt_char_budget,
                )  # with datasets/manifest.json
        _evaluate(progress, plan, rollout, "base", None, lambda: settings.base_model_name)
        for seed in plan.seed_list():
            _one_seed(settings, evaluating, out / f"seed-{seed}", plan, seed, progress, rollout)
    return write_learning(
        store, out, plan, progress.stages, viewer_address(settings), registry, machine=machine_record(settings)
    )


def machine_record(settings: Settings) -> dict:
    """What summary.json says of the machine: seeds run on different machines are compared knowing that one was
    computed in float32 and another in bfloat16 (LORALOOP_DTYPE=auto picks by the CPU's flags)."""
    return {
        "dtype": choose_dtype(settings.dtype),
        "cpu_bf16": cpu_has_bf16(),
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
    }


def _one_seed(
    settings: Settings, evaluating: Settings, folder: Path, plan: LearningPlan, seed: int, progress: Progress, rollout
) -> None:
    """BC, its held-out evaluation, RL from it and BC+RL's, for one training seed; then both models on the transfer
    subset. The targets' figures (held out) come first: a run stopped late has them and lacks only transfer's,
    which the report shows apart and which cost a set of episodes a model (65 on MiniWoB++)."""
    with progress.stage(f"train BC (seed {seed})") as due:
        if due:  # checkpoints every BC_SAVE_STEPS: a run stopped in BC goes on from the newest one
            train_bc(
                BCConfig(
                    base_model=str(settings.model_dir),
                    dataset_path=str(folder.parent / "datasets/bc.jsonl"),
                    output_dir=str(folder / "bc_lora"),
                    epochs=plan.bc_epochs,
                    lr=plan.bc_lr,
                    seed=seed,
                    batch_size=plan.batch_size,
                    whole_episodes=plan.whole_episodes,
                    group_by_length=plan.group_by_length,
                    max_length=plan.bc_max_length,
                    save_steps=BC_SAVE_STEPS,
                    resume=any((folder / "bc_lora").glob("checkpoint-*")),
                )
            )

    def bc() -> str:
        return _served(settings, folder / "bc_lora", plan.run_id("bc", seed))

    def rl() -> str:  # RL's newest stored version, loaded again into vLLM (a run going on after a restart)
        return _served(settings, folder / "rl" / "adapter", plan.run_id("rl", seed))

    _evaluate(progress, plan, rollout, "bc", seed, bc, transfer=False)
    with progress.stage(f"RL (seed {seed})") as due:
        if due:
            run_rl(_rl_config(settings, folder, plan, seed), evaluating)
    _evaluate(progress, plan, rollout, "rl", seed, rl, transfer=False)
    _evaluate(progress, plan, rollout, "bc", seed, bc, heldout=False)
    _evaluate(progress, plan, rollout, "rl", seed, rl, heldout=False)


STAGE_LABEL = {"base": "base", "bc": "BC", "rl": "BC+RL"}


def _evaluate(
    progress: Progress,
    plan: LearningPlan,
    rollout,
    model: str,
    seed: int | None,
    served,
    *,
    heldout: bool = True,
    transfer: bool = True,
) -> None:
    """A model's greedy evaluation on the held-out subset (`heldout`) and, when the plan has one, on the transfer
    subset (`transfer`; run `<run id>-transfer`), each a stage of its own; `served()` gives the served name, asked
    only when a stage is due (publishing or loading the adapter)."""
    label = STAGE_LABEL[model] + (f" (seed {seed})" if seed is not None else "")
    name: str | None = None
    for subset, suffix, stage in (
        (plan.heldout_subset if heldout else "", "", f"eval {label}"),
        (plan.transfer_subset if transfer else "", TRANSFER, f"eval {label}, transfer"),
    ):
        if not subset:
            continue
        with progress.stage(stage) as due:
            if due:
                name = name or served()
                rollout(
                    plan.evaluator, plan.run_id(model, seed) + suffix, subset, plan.eval_tasks, name, plan.eval_rollouts
                )


def _rl_config(settings: Settings, folder: Path, plan: LearningPlan, seed: int) -> RLConfig:
    """`train rl` from the seed's BC adapter on the train split; no held-out evaluation inside it (the
    held-out split is evaluated after, with the evaluator's protocol, like base and BC)."""
    return RLConfig(
        base_model=str(settings.model_dir),
        dataset_path=plan.task_registry,
        subset=plan.train_subset,
        eval_subset=None,
        eval_every=0,
        init_adapter=str(folder / "bc_lora"),
        output_dir=str(folder / "rl"),
        adapter_name=plan.run_id("rl", seed),
        experiment=plan.rl_experiment,
        iterations=plan.rl_iterations,
        tasks_per_iteration=plan.rl_tasks,
        rollouts_per_task=plan.rl_rollouts,
        lr=plan.rl_lr,
        temperature=plan.rl_temperature,
        bypass_mode=plan.rl_bypass_mode,
        seed=seed,
    )


# -- the report -------------------------------------------------------------------------------------------------
COMMAND_ERRORS = re.compile(
    r"command not found|No such file or directory|syntax error|Permission denied|"
    r"unexpected EOF|invalid option|unrecognized option"
)


def failure_mode(episode) -> str:
    """Why a stored episode failed, read from its records: an environment or service error, a wrong answer,
    `finish` on a task graded by its answer, a web task ended unsolved (its last action named: MiniWoB ends an
    episode on a wrong click or submit), the round limit (with what filled it: invalid actions, actions that
    erred, or actions that ran), or the episode's own status."""
    end = episode.end
    if end is None:
        return "no end record"
    if end.error:
        return "environment or service error"
    actions = [step.action for step in episode.steps]
    if end.status == "completed":
        if actions and actions[-1] not in ("answer", "finish"):
            return f"ended unsolved after {actions[-1]}"
        return "wrong answer" if actions and actions[-1] == "answer" else "finish without an answer"
    if end.status == "round_limit":
        invalid = actions.count("invalid")
        erred = sum(
            1
            for step in episode.steps
            if (step.action == "bash" and COMMAND_ERRORS.search(step.next_observation or ""))
            or ERROR_HEADING in (step.next_observation or "")
        )
        if invalid == len(actions):
            return "round limit: every action invalid"
        if invalid:
            return "round limit: some actions invalid"
        if erred:
            return "round limit: actions that erred"
        return "round limit: actions ran, no answer"
    return f"status {end.status or 'unknown'}"


def _families(row: Row, family_of: dict[str, str]) -> dict[str, tuple[int, int]]:
    """(solved, episodes) per task family (the `family:NAME` label) of a row's episodes."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for (task, _), solved in row.outcomes.items():
        entry = counts[family_of.get(task, "(none)")]
        entry[0] += solved
        entry[1] += 1
    return {name: (v[0], v[1]) for name, v in sorted(counts.items())}


def _pooled(label: str, rows: list[Row]) -> Row:
    """Rows of several seeds as one (their episodes together), labelled `label`, for the family chart."""
    pooled = Row(
        label,
        rows[0].model,
        sum(r.episodes for r in rows),
        sum(r.solved for r in rows),
        0.0,
        sum(r.errors for r in rows),
    )
    for name in {f for r in rows for f in r.families}:
        pooled.families[name] = (
            sum(r.families.get(name, (0, 0))[0] for r in rows),
            sum(r.families.get(name, (0, 0))[1] for r in rows),
        )
    return pooled


def write_learning(
    store,
    out: Path,
    plan: LearningPlan,
    stages: dict[str, float],
    viewer_url: str,
    registry: Registry,
    *,
    machine: dict | None = None,
) -> Path:
    """report.md over what is evaluated so far (a seed shows once its BC is evaluated; a model not evaluated yet
    is a dash), with report.csv, learning.png, success.png and success_by_family.png; summary.json beside them."""
    out.mkdir(parents=True, exist_ok=True)
    base, per_seed = _evaluated(store, plan, registry)
    seeds = [s for s, rows in per_seed.items() if "BC" in rows]  # a seed shows once its BC is evaluated
    lines = [
        f"# Learning on `{plan.task_registry}`: base → BC → BC+RL",
        "",
        f"Trained on `{plan.train_subset}`, judged on `{plan.heldout_subset}` (never trained or tuned on); "
        f"evaluator `{plan.evaluator}` for all three (greedy), {plan.max_tokens}-token replies. "
        f"Plan: {json.dumps(asdict(plan))}",
        "",
    ]
    if machine:  # the machine that wrote this report (a run resumed elsewhere: the stages before were not)
        lines += [f"Machine: {json.dumps(machine)}", ""]
    if seeds:
        lines += _over_seeds_section(out, per_seed, seeds)
        lines += _pooled_sections(store, out, plan, base, per_seed, seeds)
    else:
        lines += ["No seed has its BC evaluation yet: run the same command again to go on.", ""]
    transfer = _evaluated(store, plan, registry, TRANSFER)[1] if plan.transfer_subset else {}
    transfer_seeds = [s for s, rows in transfer.items() if rows]
    if transfer_seeds:
        lines += _transfer_section(plan, transfer, transfer_seeds)
    lines += _run_sections(store, plan, stages, viewer_url, per_seed, seeds)
    report = out / "report.md"
    report.write_text("\n".join(lines) + "\n")
    summary = {
        "plan": asdict(plan),
        "stages_s": stages,
        "machine": machine or {},
        "seeds": _rates_json(per_seed, seeds),
        "transfer": _rates_json(transfer, transfer_seeds),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return report


def _rates_json(per_seed: dict[int, dict[str, Row]], seeds: list[int]) -> dict:
    """Each seed's rows as summary.json holds them: success rate, solved, episodes, the 95% interval, errors."""
    return {
        s: {
            label: {
                "success_rate": r.success_rate,
                "solved": r.solved,
                "episodes": r.episodes,
                "ci95": list(r.interval),
                "errors": r.errors,
            }
            for label, r in per_seed[s].items()
        }
        for s in seeds
    }


def _evaluated(
    store, plan: LearningPlan, registry: Registry, suffix: str = ""
) -> tuple[Row | None, dict[int, dict[str, Row]]]:
    """The base's held-out row and each seed's evaluated rows by model (base, BC, BC+RL), with task families (the
    `family:` label, else the task's category: MiniWoB's task type); `suffix` TRANSFER: the transfer subset's."""
    family_of = {
        t.index: next((label.split(":", 1)[1] for label in t.labels if label.startswith("family:")), t.category)
        for t in registry.tasks
    }

    def row(label: str, model: str, seed: int | None) -> Row | None:
        run_id = plan.run_id(model, seed) + suffix
        entries = run_index(store, plan.evaluator, run_id)
        if not entries:
            return None
        r = summary_row(label, entries, run_id)
        r.families = _families(r, family_of)
        return r

    base = row("base", "base", None)
    rows = {s: {"base": base, "BC": row("BC", "bc", s), "BC+RL": row("BC+RL", "rl", s)} for s in plan.seed_list()}
    return base, {s: {label: r for label, r in by.items() if r is not None} for s, by in rows.items()}


def _rates_table(per_seed: dict[int, dict[str, Row]], seeds: list[int]) -> tuple[list[str], dict]:
    """The success table over seeds (a row per model: each seed's rate, mean and sd) and the (mean, sd) by model."""
    rates = {label: {s: per_seed[s][label].success_rate for s in seeds if label in per_seed[s]} for label in MODELS}
    spread = {label: mean_sd(list(values.values())) for label, values in rates.items() if values}
    lines = [
        "| Model | " + " | ".join(f"seed {s}" for s in seeds) + " | mean | sd |",
        "|---|" + "---:|" * (len(seeds) + 2),
    ]
    for label, values in rates.items():
        mean, sd = spread.get(label, (None, None))
        note = " (greedy: one evaluation, the same for every seed)" if label == "base" else ""
        cells = [f"{values[s]:.1%}" if s in values else "–" for s in seeds]
        lines.append(
            f"| {label}{note} | "
            + " | ".join(cells)
            + " | "
            + (f"{mean:.1%} | {sd:.1%} |" if mean is not None else "– | – |")
        )
    return lines, spread


def _over_seeds_section(out: Path, per_seed: dict[int, dict[str, Row]], seeds: list[int]) -> list[str]:
    """Held-out success per seed with mean and sd (and learning.png), then each seed's table and McNemar pairs."""
    table, spread = _rates_table(per_seed, seeds)
    learning_chart(spread, out / "learning.png", f"held-out success over {len(seeds)} seed(s)")
    lines = ["## Held-out success over seeds", "", *table]
    missing = [s for s in seeds if "BC+RL" not in per_seed[s]]
    if missing:
        lines += [
            "",
            f"Seed(s) {', '.join(map(str, missing))}: BC+RL not evaluated yet (run the same command again to go on).",
        ]
    lines += ["", "![learning](learning.png)", ""]
    for s in seeds:
        rows = list(per_seed[s].values())
        lines += [
            f"## Seed {s}",
            "",
            markdown_table(rows),  # (rows are relabelled: their links are below)
            "Paired (same held-out tasks), exact McNemar:",
            "",
            paired_table(rows),
            paired_table(rows[1:]),
        ]
    return lines


def _transfer_section(plan: LearningPlan, per_seed: dict[int, dict[str, Row]], seeds: list[int]) -> list[str]:
    """Success on the transfer subset (never trained on) over seeds, then per task family with the seeds pooled."""
    table, _ = _rates_table(per_seed, seeds)
    final = _pooled_rows(per_seed, seeds)
    lines = [
        f"## Transfer: `{plan.transfer_subset}` (never trained or tuned on)",
        "",
        *table,
        "",
        *_family_table(final),
    ]
    return [*lines, ""]


def _pooled_rows(per_seed: dict[int, dict[str, Row]], seeds: list[int]) -> list[Row]:
    """A row per model evaluated on some seed (base, BC, BC+RL), the seeds' episodes pooled."""
    return [
        _pooled(label, [per_seed[s][label] for s in seeds if label in per_seed[s]])
        for label in MODELS
        if any(label in per_seed[s] for s in seeds)
    ]


def _family_table(rows: list[Row]) -> list[str]:
    """Solved/episodes per task family (a row each) for each of the pooled rows (a column each)."""
    lines = ["| Family | " + " | ".join(r.experiment for r in rows) + " |", "|---|" + "---:|" * len(rows)]
    for name in sorted({f for r in rows for f in r.families}):
        cells = [f"{r.families[name][0]}/{r.families[name][1]}" if name in r.families else "–" for r in rows]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def _pooled_sections(
    store, out: Path, plan: LearningPlan, base: Row | None, per_seed: dict[int, dict[str, Row]], seeds: list[int]
) -> list[str]:
    """Seeds pooled: success by task family, the charts and report.csv, and the most common failure modes."""
    final = _pooled_rows(per_seed, seeds)
    family_chart(final, out / "success_by_family.png", "Held-out success by task family (seeds pooled)")
    shown = [base] + [per_seed[s][label] for s in seeds for label in ("BC", "BC+RL") if label in per_seed[s]]
    success_chart([r for r in shown if r is not None], out / "success.png", "Held-out success with 95% intervals")
    write_csv(
        [r for s in seeds for r in per_seed[s].values()],
        out / "report.csv",
        [{"seed": s, "model": label} for s in seeds for label in per_seed[s]],
    )
    lines = ["## Success by task family (seeds pooled)", "", *_family_table(final)]
    judged = "BC+RL" if any("BC+RL" in per_seed[s] for s in seeds) else "BC"
    modes = Counter(
        failure_mode(e)
        for s in seeds
        if judged in per_seed[s]
        for e in iter_episodes(store, run_prefix(plan.evaluator, per_seed[s][judged].run_id))
        if not e.success
    )
    lines += [
        "",
        "![success](success.png) ![by family](success_by_family.png)",
        "",
        f"## The {TOP_FAILURES} most common failure modes of {judged} (held out, seeds pooled)",
        "",
        "| Failure mode | Episodes |",
        "|---|---:|",
    ]
    lines += [f"| {mode} | {count} |" for mode, count in modes.most_common(TOP_FAILURES)]
    return [*lines, ""]


def _run_sections(
    store,
    plan: LearningPlan,
    stages: dict[str, float],
    viewer_url: str,
    per_seed: dict[int, dict[str, Row]],
    seeds: list[int],
) -> list[str]:
    """The teacher's episodes, the stages' wall times, and a viewer link to each evaluated run."""
    teacher = run_index(store, plan.teacher, plan.run_id("teacher"))
    skipped = sum(1 for e in teacher if e.status == "skipped")
    lines = [
        f"Teacher: {len(teacher)} train tasks played, {sum(e.success for e in teacher)} solved, {skipped} "
        "skipped (no example solution for the scripted teacher to replay).",
        "",
    ]
    lines += ["## Stages (wall time, s)", "", "| Stage | Seconds |", "|---|---:|"]
    lines += [f"| {name} | {seconds} |" for name, seconds in stages.items()]
    lines += ["", f"Total: {sum(stages.values()):.0f} s.", "", "## Episodes in the viewer", ""]
    runs = [("teacher", plan.teacher, plan.run_id("teacher")), ("base", plan.evaluator, plan.run_id("base"))]
    runs += [
        (f"{label} seed {s}", plan.evaluator, per_seed[s][label].run_id)
        for s in seeds
        for label in ("BC", "BC+RL")
        if label in per_seed[s]
    ]
    return lines + [f"- {label}: {episodes_url(viewer_url, mode, run_id)}" for label, mode, run_id in runs]


def closing_table(out: Path) -> Table:
    """The run's figures for the terminal, read from summary.json: held-out success per seed with intervals."""
    summary = json.loads((out / "summary.json").read_text())
    table = Table(title="held-out success (95% CI)", title_justify="left")
    for column in ("seed", *MODELS):
        table.add_column(column, justify="left" if column == "seed" else "right")
    for seed, results in summary["seeds"].items():
        cells = []
        for label in MODELS:
            r = results.get(label)
            cells.append(
                f"{r['solved']}/{r['episodes']} = {r['success_rate']:.0%} ({r['ci95'][0]:.0%}–{r['ci95'][1]:.0%})"
                if r
                else "–"
            )
        table.add_row(seed, *cells)
    return table
