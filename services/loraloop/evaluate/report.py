"""Summarise stored episodes per experiment: a Markdown table with intervals, pass@k and pass^k, a paired
comparison, a CSV and charts; and results over training seeds."""
from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from loraloop.evaluate.charts import family_chart, learning_chart, steps_chart, success_chart
from loraloop.evaluate.stats import mcnemar, pass_at_k, pass_hat_k, wilson
from loraloop.store.backends import Store
from loraloop.store.browse import run_index


@dataclass
class Row:
    """One experiment's results on the evaluated tasks."""

    experiment: str
    model: str
    episodes: int
    solved: int
    median_steps: float
    errors: int  # episodes that ended in an environment or service error, not an agent failure
    mean_reward: float = 0.0
    tasks: int = 0
    k: int = 1  # attempts per task (the fewest any task has): pass@k and pass^k are over this many
    pass_at_k: float | None = None  # None when k is 1
    pass_hat_k: float | None = None
    outcomes: dict[tuple[str, int], bool] = field(default_factory=dict, repr=False)  # (task, attempt) -> solved
    families: dict[str, tuple[int, int]] = field(default_factory=dict, repr=False)  # family -> (solved, episodes)
    steps: list[int] = field(default_factory=list, repr=False)

    @property
    def success_rate(self) -> float:
        """Solved episodes over all episodes (0 when none ran)."""
        return self.solved / self.episodes if self.episodes else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        """The success rate's 95% Wilson interval."""
        return wilson(self.solved, self.episodes)


def summarise(store: Store, runs: list[tuple[str, str]]) -> list[Row]:
    """A row per (mode, run_id): success with its interval, pass@k and pass^k over a task's attempts, median
    steps, mean reward, errors apart from agent failures, and per task family. Read from each run's index
    object (store/browse.py: written when its job ended), so a report over 10,000 episodes reads one object
    a run; corrupt episodes are left out of the figures."""
    rows = []
    for mode, run_id in runs:
        episodes = [e for e in run_index(store, mode, run_id) if not e.corrupt]
        steps = [e.steps for e in episodes]
        by_task: dict[str, list[bool]] = defaultdict(list)
        families: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for e in episodes:
            by_task[e.task_id].append(e.success)
            family = families[e.category or "(none)"]
            family[0] += e.success
            family[1] += 1
        k = min((len(v) for v in by_task.values()), default=1)
        row = Row(mode, episodes[0].model or "" if episodes else "", len(episodes), sum(e.success for e in episodes),
                  statistics.median(steps) if steps else 0.0, sum(1 for e in episodes if e.error),
                  mean_reward=statistics.fmean(e.reward for e in episodes) if episodes else 0.0,
                  tasks=len(by_task), k=k, outcomes={(e.task_id, e.attempt): e.success for e in episodes},
                  families={f: (v[0], v[1]) for f, v in sorted(families.items())}, steps=steps)
        if k > 1:
            row.pass_at_k = statistics.fmean(pass_at_k(len(v), sum(v), k) for v in by_task.values())
            row.pass_hat_k = statistics.fmean(pass_hat_k(len(v), sum(v), k) for v in by_task.values())
        rows.append(row)
    return rows


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def markdown_table(rows: list[Row]) -> str:
    """The results as a Markdown table: success with its 95% interval, pass@k and pass^k (k attempts per
    task), median steps, mean reward, and errors of the environment or service counted apart."""
    lines = ["| Experiment | Model | Tasks | Episodes | Success rate (95% CI) | pass@k | pass^k | Median steps "
             "| Mean reward | Env/service errors |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        low, high = r.interval
        k = f" (k={r.k})" if r.k > 1 else ""
        lines.append(f"| `{r.experiment}` | {r.model} | {r.tasks} | {r.episodes} | {r.success_rate:.1%} "
                     f"({r.solved}/{r.episodes}; {low:.0%}–{high:.0%}) | {_rate(r.pass_at_k)}{k} | "
                     f"{_rate(r.pass_hat_k)}{k} | {r.median_steps:g} | {r.mean_reward:.3f} | {r.errors} |")
    return "\n".join(lines) + "\n"


def paired_table(rows: list[Row]) -> str:
    """Each experiment against the first on the (task, attempt) pairs both played: who alone solved how many,
    and the exact McNemar p-value; empty with fewer than two experiments."""
    if len(rows) < 2:
        return ""
    first = rows[0]
    lines = [f"| `{first.experiment}` vs | Pairs | Only `{first.experiment}` solved | Only the other solved "
             "| McNemar p | At 5% |", "|---|---:|---:|---:|---:|---|"]
    for other in rows[1:]:
        pairs = sorted(set(first.outcomes) & set(other.outcomes))
        only_first = sum(first.outcomes[p] and not other.outcomes[p] for p in pairs)
        only_other = sum(other.outcomes[p] and not first.outcomes[p] for p in pairs)
        p_value = mcnemar(only_first, only_other)
        verdict = "significant" if p_value < 0.05 else "not significant"
        lines.append(f"| `{other.experiment}` | {len(pairs)} | {only_first} | {only_other} | {p_value:.3g} | {verdict} |")
    return "\n".join(lines) + "\n"


CSV_COLUMNS = ("experiment", "model", "tasks", "episodes", "solved", "success_rate", "ci_low", "ci_high", "k",
               "pass_at_k", "pass_hat_k", "median_steps", "mean_reward", "errors")


def write_csv(rows: list[Row], path: Path) -> None:
    """One line per experiment with every figure of the table, for a spreadsheet or pandas."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        for r in rows:
            values = {**{c: getattr(r, c, None) for c in CSV_COLUMNS}, "success_rate": r.success_rate,
                      "ci_low": r.interval[0], "ci_high": r.interval[1]}
            writer.writerow(["" if values[c] is None else values[c] for c in CSV_COLUMNS])


def viewer_links(viewer_url: str, mode: str, run_id: str) -> str:
    """Links to the episodes behind a row's numbers in the trajectory viewer: all, solved, failed, errors."""
    base = f"{viewer_url.rstrip('/')}/ui/runs/{mode}/{run_id}"
    return ", ".join([f"[episodes]({base})"] + [f"[{label}]({base}?outcome={outcome})" for label, outcome in
                                                (("solved", "solved"), ("failed", "failed"), ("errors", "error"))])


def write_report(store: Store, runs: list[tuple[str, str]], out_dir: Path, title: str,
                 viewer_url: str = "") -> tuple[Path, list[Row]]:
    """Write report.md, report.csv and the charts (success.png with intervals, success_by_family.png,
    steps.png) under out_dir; return the Markdown path and the rows. With `viewer_url` (the rollout API),
    each run links to its episodes in the trajectory viewer."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = summarise(store, runs)
    md = out_dir / "report.md"
    paired = paired_table(rows)
    md.write_text(f"# {title}\n\n{markdown_table(rows)}\n"
                  + (f"## Paired comparison (same tasks and attempts)\n\n{paired}\n" if paired else "")
                  + "![success rate](success.png) ![success by family](success_by_family.png) ![steps](steps.png)\n\n"
                  + "".join(f"- `{m}`: run `{r}`" + (f": {viewer_links(viewer_url, m, r)}" if viewer_url else "") + "\n"
                            for m, r in runs))
    write_csv(rows, out_dir / "report.csv")
    success_chart(rows, out_dir / "success.png", title)
    family_chart(rows, out_dir / "success_by_family.png", "Success by task family")
    steps_chart(rows, out_dir / "steps.png", "Steps per episode")
    return md, rows


def mean_sd(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (sd 0 for a single value)."""
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def write_learning_report(rates: dict[str, list[float]], episodes: dict[str, int], seeds: list[int], out_dir: Path,
                          title: str, notes: str) -> Path:
    """report.md (per experiment: success per seed, mean, sd, episodes) and learning.png under out_dir."""
    spread = {name: mean_sd(values) for name, values in rates.items()}
    lines = [f"# {title}", "", "| Model | " + " | ".join(f"seed {s}" for s in seeds) + " | mean | sd | episodes |",
             "|---|" + "---:|" * (len(seeds) + 3)]
    lines += [f"| `{name}` | " + " | ".join(f"{v:.1%}" for v in values)
              + f" | {spread[name][0]:.1%} | {spread[name][1]:.1%} | {episodes[name]} |"
              for name, values in rates.items()]
    lines += ["", notes, "", "![success](learning.png)"]
    report = out_dir / "report.md"
    report.write_text("\n".join(lines) + "\n")
    learning_chart(spread, out_dir / "learning.png", f"{len(seeds)} seeds")
    return report
