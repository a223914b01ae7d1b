"""Summarise stored episodes per experiment into a Markdown table and a bar chart, and results over seeds."""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from loraloop.evaluate.charts import learning_chart, success_chart
from loraloop.store.backends import Store
from loraloop.store.trajectories import iter_episodes, run_prefix


@dataclass
class Row:
    """One experiment's results on the evaluated tasks."""

    experiment: str
    model: str
    episodes: int
    solved: int
    median_steps: float
    errors: int

    @property
    def success_rate(self) -> float:
        """Solved episodes over all episodes (0 when none ran)."""
        return self.solved / self.episodes if self.episodes else 0.0


def summarise(store: Store, runs: list[tuple[str, str]]) -> list[Row]:
    """A row per (mode, run_id): episodes, solved, median steps, episodes that ended in an error."""
    rows = []
    for mode, run_id in runs:
        episodes = list(iter_episodes(store, run_prefix(mode, run_id)))
        steps = [e.end.total_steps for e in episodes]
        model = episodes[0].start.worker_model or "" if episodes else ""
        rows.append(Row(mode, model, len(episodes), sum(e.success for e in episodes),
                        statistics.median(steps) if steps else 0.0,
                        sum(1 for e in episodes if e.end.error)))
    return rows


def markdown_table(rows: list[Row]) -> str:
    """The results as a Markdown table (the seed's columns plus errors)."""
    lines = ["| Experiment | Model | Episodes | Success rate | Median steps | Env/service errors |",
             "|---|---|---:|---:|---:|---:|"]
    lines += [f"| `{r.experiment}` | {r.model} | {r.episodes} | {r.success_rate:.1%} ({r.solved}/{r.episodes}) "
              f"| {r.median_steps:g} | {r.errors} |" for r in rows]
    return "\n".join(lines) + "\n"


def write_report(store: Store, runs: list[tuple[str, str]], out_dir: Path, title: str) -> tuple[Path, list[Row]]:
    """Write report.md and success.png under out_dir; return the Markdown path and the rows."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = summarise(store, runs)
    md = out_dir / "report.md"
    md.write_text(f"# {title}\n\n{markdown_table(rows)}\n![success rate](success.png)\n\n"
                  + "".join(f"- `{m}`: run `{r}`\n" for m, r in runs))
    success_chart(rows, out_dir / "success.png", title)
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
