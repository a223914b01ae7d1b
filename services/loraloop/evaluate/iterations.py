"""Success across the loop: every model version measured in some runs of the store, by loop iteration and by the
algorithm that trained it, as a Markdown table, a CSV and two PNG charts (`loraloop report --runs …`).

What `loraloop train rl` and `make loop` store is enough: every episode names the served model that sampled it
(`<adapter>-v<k>`, or the base model) and its task's split, and every adapter version's metadata names the
algorithm that trained it (`training_metrics.algorithm`; an RL version also its iteration). A version's place
in the loop is its number k (each turn of `make loop` and each RL iteration publishes one version); a base
model's is 0. Each row links to the viewer's page of the episodes that measured it."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from loraloop.charts import iteration_chart, success_chart
from loraloop.errors import ConfigError
from loraloop.evaluate.report import FIGURES, Row, episodes_url, figure_cells, summary_row, write_csv
from loraloop.store import adapters
from loraloop.store.backends import Store
from loraloop.store.browse import EpisodeEntry, RunEntry, run_index, runs


@dataclass(frozen=True)
class Version:
    """What trained the model that sampled some episodes."""

    iteration: int | None  # the adapter version's number, 0 for a base model, None for an adapter this store lacks
    algorithm: str  # the version's training_metrics.algorithm ('bc', 'rl'…), 'base', or '?' when not known
    trained_by: str  # in words, for the table: 'rl (RL iteration 3)', 'bc', 'base model'


@dataclass
class Measured:
    """One model version's episodes on one split in one run, and their figures."""

    mode: str
    run_id: str
    split: str
    version: Version
    row: Row
    entries: list[EpisodeEntry] = field(repr=False, default_factory=list)

    @property
    def series(self) -> str:
        """The line this measurement belongs to in the chart by iteration: its mode on its split."""
        return f"{self.mode} · {self.split or 'all'}"


def select_runs(store: Store, patterns: list[str]) -> list[RunEntry]:
    """The runs (each mode of each) whose id is one of `patterns` or matches it as a shell pattern (`myrl-*`:
    an RL run's iterations and evaluations), in id order; a pattern no run matches fails naming it and the
    newest runs the store holds."""
    stored = runs(store)
    chosen: list[RunEntry] = []
    for pattern in patterns:
        found = [r for r in stored if fnmatchcase(r.run_id, pattern)]
        if not found:
            newest = ", ".join(dict.fromkeys(r.run_id for r in stored[:8])) or "none"
            raise ConfigError(f"--runs {pattern!r}: no run of that id in {store.url} (newest runs there: {newest})")
        chosen += [r for r in found if r not in chosen]
    return sorted(chosen, key=lambda r: (r.run_id, r.mode))


def version_of(store: Store, model: str) -> Version:
    """What trained a served model: an adapter version `<name>-v<k>` this store holds is iteration k, trained by
    the algorithm its metadata names; any other model is a base model (iteration 0), unless its name is a
    version's that this store does not hold (iteration and algorithm unknown)."""
    parsed = adapters.parse_served(model)
    if parsed is None:
        return Version(0, "base", "base model")
    name, version = parsed
    number = adapters.version_number(version)
    if number not in adapters.versions(store, name):
        return Version(None, "?", f"not in {store.url}")
    metrics = adapters.read_metadata(store, name, version).get("training_metrics") or {}
    algorithm = metrics.get("algorithm") or "?"
    if "rl_iteration" in metrics:
        return Version(number, algorithm, f"{algorithm} (RL iteration {metrics['rl_iteration'] + 1})")
    return Version(number, algorithm, algorithm)


def measure(store: Store, chosen: Iterable[RunEntry]) -> tuple[list[Measured], list[str]]:
    """Each run's episodes grouped by the model that sampled them and their split, with the figures of each
    group, ordered by series and iteration; and notes on what was left out (scripted policies, corrupt
    episodes). Read from the runs' index objects."""
    measured: list[Measured] = []
    versions: dict[str, Version] = {}
    scripted: Counter[str] = Counter()
    corrupt = 0
    for run in chosen:
        groups: dict[tuple[str, str], list[EpisodeEntry]] = defaultdict(list)
        for e in run_index(store, run.mode, run.run_id):
            if e.corrupt:
                corrupt += 1
            elif e.policy == "scripted":
                scripted[run.mode] += 1
            else:
                groups[(e.model or "", e.split)].append(e)
        for (model, split), entries in groups.items():
            if model not in versions:
                versions[model] = version_of(store, model)
            measured.append(
                Measured(
                    run.mode, run.run_id, split, versions[model], summary_row(run.mode, entries, run.run_id), entries
                )
            )
    measured.sort(key=lambda m: (m.series, -1 if m.version.iteration is None else m.version.iteration, m.run_id))
    notes = [
        f"left out: {n} episodes of `{mode}` (a scripted policy, no model)" for mode, n in sorted(scripted.items())
    ]
    if corrupt:
        notes.append(f"left out: {corrupt} corrupt episodes (shown as corrupt in the viewer)")
    return measured, notes


def pooled(label: str, group: list[Measured]) -> Row:
    """One row over the episodes of several measurements (the same version measured in several runs, or an
    algorithm's versions)."""
    return summary_row(label, [e for m in group for e in m.entries])


def by_iteration(measured: list[Measured]) -> dict[str, list[tuple[int, Row]]]:
    """Per series, (iteration, the episodes measured at it pooled) in iteration order; versions this store
    lacks are left out."""
    points: dict[str, dict[int, list[Measured]]] = defaultdict(lambda: defaultdict(list))
    for m in measured:
        if m.version.iteration is not None:
            points[m.series][m.version.iteration].append(m)
    return {series: [(i, pooled(series, group)) for i, group in sorted(at.items())] for series, at in points.items()}


def by_algorithm(measured: list[Measured]) -> list[tuple[str, str, int, Row]]:
    """Per (algorithm, split): the number of versions measured and their episodes pooled, labelled
    `<algorithm> · <split>`."""
    groups: dict[tuple[str, str], list[Measured]] = defaultdict(list)
    for m in measured:
        groups[(m.version.algorithm, m.split or "all")].append(m)
    return [
        (algorithm, split, len({m.row.model for m in group}), pooled(f"{algorithm} · {split}", group))
        for (algorithm, split), group in sorted(groups.items())
    ]


def iteration_table(measured: list[Measured], viewer_url: str) -> str:
    """A line per measurement: iteration, model, what trained it, the run (linked to its episodes of that model
    in the viewer), the split, and the figures, their counts linked to the episodes behind them."""
    lines = ["| Iteration | Model | Trained by | Run | Split " + FIGURES[0], "|---:|---|---|---|---|" + FIGURES[1]]
    for m in measured:

        def link(outcome: str, m: Measured = m) -> str:
            return episodes_url(viewer_url, m.mode, m.run_id, outcome, m.row.model)

        run = f"`{m.mode}` / `{m.run_id}`"
        iteration = "?" if m.version.iteration is None else m.version.iteration
        lines.append(
            f"| {iteration} | {m.row.model} | {m.version.trained_by} | "
            + (f"[{run}]({link('')})" if viewer_url else run)
            + f" | {m.split or 'all'} |"
            + figure_cells(m.row, link if viewer_url else None)
        )
    return "\n".join(lines) + "\n"


def algorithm_table(groups: list[tuple[str, str, int, Row]]) -> str:
    """A line per (algorithm, split): versions measured, episodes and success with its 95% interval."""
    lines = ["| Algorithm | Split | Versions | Episodes | Success rate (95% CI) |", "|---|---|---:|---:|---:|"]
    for algorithm, split, versions, r in groups:
        low, high = r.interval
        lines.append(
            f"| {algorithm} | {split} | {versions} | {r.episodes} | {r.success_rate:.1%} "
            f"({r.solved}/{r.episodes}; {low:.0%}–{high:.0%}) |"
        )
    return "\n".join(lines) + "\n"


def write_iteration_report(
    store: Store, chosen: Iterable[RunEntry], out_dir: Path, title: str, viewer_url: str = ""
) -> tuple[Path, list[Measured]]:
    """report.md (by iteration, then by algorithm), report.csv (a line per measurement) and the charts
    success_by_iteration.png and success_by_algorithm.png under out_dir; returns the Markdown path and the
    measurements. Fails when the runs hold no episode of a model (scripted policies' only)."""
    measured, notes = measure(store, chosen)
    if not measured:
        raise ConfigError(
            f"{title}: the runs hold no episode sampled by a model" + (f" ({'; '.join(notes)})" if notes else "")
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    algorithms = by_algorithm(measured)
    md = out_dir / "report.md"
    md.write_text(
        f"# {title}\n\nIteration: the adapter version's number (each loop turn and RL iteration "
        "publishes one), 0 for a base model.\n\n## By loop iteration\n\n"
        f"{iteration_table(measured, viewer_url)}\n![success by iteration](success_by_iteration.png)\n\n"
        f"## By training algorithm (its versions pooled)\n\n{algorithm_table(algorithms)}\n"
        "![success by algorithm](success_by_algorithm.png)\n"
        + "".join(f"\n- {note}" for note in notes)
        + ("\n" if notes else "")
    )
    write_csv(
        [m.row for m in measured],
        out_dir / "report.csv",
        [
            {
                "iteration": m.version.iteration,
                "trained_by": m.version.trained_by,
                "algorithm": m.version.algorithm,
                "run_id": m.run_id,
                "split": m.split,
            }
            for m in measured
        ],
    )
    iteration_chart(by_iteration(measured), out_dir / "success_by_iteration.png", "Success by loop iteration")
    success_chart(
        [r for *_, r in algorithms],
        out_dir / "success_by_algorithm.png",
        "Success by training algorithm (its versions pooled)",
    )
    return md, measured
