"""The PNG charts the reports link: success per experiment (with intervals) and per task family, steps per
episode, success over training seeds and by loop iteration, a loss curve, the RL curve."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def chart(path: Path, title: str, ylabel: str, size: tuple[float, float] = (5, 3.5)) -> Iterator[Any]:
    """Axes to draw on; the figure is titled (wrapped to its width), labelled and saved to `path` (PNG,
    headless) when the block ends."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=size)
    try:
        yield ax
        ax.set_ylabel(ylabel)
        ax.set_title(textwrap.fill(title, width=int(size[0] * 10)))
        fig.tight_layout()
        fig.savefig(path, dpi=120)
    finally:
        plt.close(fig)


def error_bars(rows: Sequence[Any]) -> list[list[float]]:
    """Matplotlib's asymmetric `yerr` for rows of evaluate.report.Row, in percent: the distance from each
    success rate down to its interval's lower bound and up to its upper one. Never negative (matplotlib
    refuses that), even for an interval handed in that does not hold its rate."""
    return [
        [100 * max(0.0, r.success_rate - r.interval[0]) for r in rows],
        [100 * max(0.0, r.interval[1] - r.success_rate) for r in rows],
    ]


def success_chart(rows: Sequence[Any], path: Path, title: str) -> None:
    """Success rate per experiment (rows of evaluate.report.Row) with its 95% interval, each bar annotated
    solved/episodes."""
    with chart(path, title, "success rate (%, 95% CI)", size=(max(6, 1.6 * len(rows)), 4)) as ax:
        rates = [100 * r.success_rate for r in rows]
        bars = ax.bar([r.experiment for r in rows], rates, yerr=error_bars(rows), capsize=6, color="#4C72B0")
        for bar, row in zip(bars, rows):
            ax.annotate(
                f"{row.solved}/{row.episodes}",
                (bar.get_x() + bar.get_width() / 2, 2),
                ha="center",
                va="bottom",
                fontsize=9,
                color="white" if row.success_rate > 0.1 else "black",
            )
        ax.set_ylim(0, 105)


def family_chart(rows: Sequence[Any], path: Path, title: str) -> None:
    """Success rate per task family (the tasks' category), one bar per experiment in each family."""
    families = sorted({f for r in rows for f in r.families})
    width = 0.8 / max(1, len(rows))
    with chart(path, title, "success rate (%)", size=(max(6, 1.2 * len(families) * max(1, len(rows)) / 2), 4)) as ax:
        for n, row in enumerate(rows):
            shares = [
                100 * solved / played if played else 0
                for solved, played in (row.families.get(f, (0, 0)) for f in families)
            ]
            ax.bar([i + n * width for i in range(len(families))], shares, width, label=row.experiment)
        ax.set_xticks(
            [i + width * (len(rows) - 1) / 2 for i in range(len(families))], families, rotation=30, ha="right"
        )
        ax.set_ylim(0, 105)
        ax.legend(fontsize=8)


def steps_chart(rows: Sequence[Any], path: Path, title: str) -> None:
    """How many steps episodes took, per experiment (a histogram each, one step per bin)."""
    longest = max((max(r.steps) for r in rows if r.steps), default=1)
    with chart(path, title, "episodes", size=(6, 4)) as ax:
        ax.hist([r.steps for r in rows], bins=range(0, longest + 2), label=[r.experiment for r in rows], align="left")
        ax.set_xlabel("steps")
        ax.legend(fontsize=8)


def iteration_chart(series: dict[str, list[tuple[int, Any]]], path: Path, title: str) -> None:
    """Success rate with its 95% interval by loop iteration, a line per series (rows of evaluate.report.Row at
    each iteration), the series set a little apart so that their intervals do not hide each other."""
    from matplotlib.ticker import MaxNLocator

    with chart(path, title, "success rate (%, 95% CI)", size=(7, 4)) as ax:
        for n, (label, points) in enumerate(series.items()):
            shift = 0.06 * (n - (len(series) - 1) / 2)
            rows = [r for _, r in points]
            ax.errorbar(
                [i + shift for i, _ in points],
                [100 * r.success_rate for r in rows],
                yerr=error_bars(rows),
                marker="o",
                capsize=4,
                label=label,
            )
        ax.set_xlabel("loop iteration (adapter version; 0: base model)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylim(0, 105)
        ax.legend(fontsize=8)


def learning_chart(spread: dict[str, tuple[float, float]], path: Path, title: str) -> None:
    """Each experiment's success rate over training seeds, `spread` = {name: (mean, sd)}, as bars with error bars
    of one sd, cut at 0 and 1 (a rate cannot leave them)."""
    means = [m for m, _ in spread.values()]
    errors = [[min(sd, m) for m, sd in spread.values()], [min(sd, 1 - m) for m, sd in spread.values()]]
    with chart(path, title, "test success rate (mean ± sd)") as ax:
        ax.bar(
            list(spread),
            means,
            yerr=[[max(0.0, e) for e in side] for side in errors],
            capsize=6,
            color=["#999999", "#2a7ae2"],
        )
        ax.set_ylim(0, 1)


def loss_chart(losses: Sequence[tuple[int, float]], path: Path, title: str) -> None:
    """Training loss per logged step."""
    with chart(path, title, "training loss", size=(6, 3.5)) as ax:
        ax.plot([s for s, _ in losses], [v for _, v in losses], marker="o", markersize=3)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)


def rl_curve(
    iterations: Sequence[int], train: Sequence[float | None], held_out: Sequence[float | None], path: Path, title: str
) -> None:
    """Train (sampled rollouts) and held-out (greedy) success rate by RL iteration; gaps where not measured."""
    with chart(path, title, "success rate", size=(6, 3.5)) as ax:
        for values, label, style in ((train, "train rollouts", "o-"), (held_out, "held-out (greedy)", "s-")):
            points = [(i, v) for i, v in zip(iterations, values) if v is not None]
            if points:
                ax.plot([i for i, _ in points], [v for _, v in points], style, label=label)
        ax.set_xlabel("iteration (0: before RL)")
        ax.set_ylim(-0.02, 1.02)
        if ax.get_legend_handles_labels()[0]:  # nothing measured yet: an empty chart, no empty legend
            ax.legend()
        ax.grid(alpha=0.3)
