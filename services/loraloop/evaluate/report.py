"""Summarise stored episodes per experiment into a Markdown table and a bar chart."""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from loraloop.store.backends import Store
from loraloop.store.trajectories import PREFIX, iter_episodes


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
        episodes = list(iter_episodes(store, f"{PREFIX}/{mode}/{run_id}/"))
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


def bar_chart(rows: list[Row], path: Path, title: str) -> None:
    """Success rate per experiment as a PNG bar chart."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(4, 1.6 * len(rows)), 3.5))
    bars = ax.bar([r.experiment for r in rows], [100 * r.success_rate for r in rows], color="#4C72B0")
    for bar, row in zip(bars, rows):
        ax.annotate(f"{row.solved}/{row.episodes}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center", va="bottom", fontsize=9)
    ax.set_ylabel("success rate (%)")
    ax.set_ylim(0, 105)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_report(store: Store, runs: list[tuple[str, str]], out_dir: Path, title: str) -> tuple[Path, list[Row]]:
    """Write report.md and success.png under out_dir; return the Markdown path and the rows."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = summarise(store, runs)
    md = out_dir / "report.md"
    md.write_text(f"# {title}\n\n{markdown_table(rows)}\n![success rate](success.png)\n\n"
                  + "".join(f"- `{m}`: run `{r}`\n" for m, r in runs))
    bar_chart(rows, out_dir / "success.png", title)
    return md, rows
