"""Summarise stored episodes per experiment: a Markdown table with intervals, pass@k and pass^k, a paired
comparison, a CSV and charts; and results over training seeds."""

from __future__ import annotations

import csv
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from urllib.parse import urlencode

from loraloop.charts import family_chart, learning_chart, steps_chart, success_chart
from loraloop.defaults import ROLLOUT_API_PORT
from loraloop.evaluate.stats import mcnemar, pass_at_k, pass_hat_k, wilson
from loraloop.settings import Settings
from loraloop.store.backends import Store
from loraloop.store.browse import EpisodeEntry, run_index


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
    run_id: str = ""  # the run the episodes are from (the viewer's page of them)
    corrupt: int = 0  # episode objects that cannot be read: left out of every figure, counted here
    retries: int = 0  # episodes played again after a model server or environment failure (not stored: the job's)
    k: int = 1  # attempts per task (the fewest any task has): pass@k and pass^k are over this many
    pass_at_k: float | None = None  # None when k is 1
    pass_hat_k: float | None = None
    outcomes: dict[tuple[str, int], bool] = field(default_factory=dict, repr=False)  # (task, attempt) -> solved
    families: dict[str, tuple[int, int]] = field(default_factory=dict, repr=False)  # family -> (solved, episodes)
    steps: list[int] = field(default_factory=list, repr=False)
    manager_calls: int = 0  # the HALO orchestrator's, over the row's episodes (0 for plain workers)
    cache_hits: int = 0
    cache_misses: int = 0

    @property
    def played(self) -> int:
        """The episodes the policy played to an end: all of them but those an environment, a server or the run
        lost (`errors`), which say nothing about the policy."""
        return self.episodes - self.errors

    @property
    def success_rate(self) -> float:
        """Solved episodes over the episodes played (0 when none was): a server timeout does not lower a score."""
        return self.solved / self.played if self.played else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        """The success rate's 95% Wilson interval, over the episodes played."""
        return wilson(self.solved, self.played)


def summary_row(label: str, entries: list[EpisodeEntry], run_id: str = "") -> Row:
    """The figures of some episodes (a run's, or one model's in a run) as a row labelled `label`: success with
    its interval, pass@k and pass^k over a task's attempts, median steps, mean reward, errors apart from agent
    failures, and per task family. Corrupt entries are left out of them, and counted."""
    episodes = [e for e in entries if not e.corrupt]
    played = [e for e in episodes if not e.error]  # the rates, pairs and families are over these
    steps = [e.steps for e in episodes]
    by_task: dict[str, list[bool]] = defaultdict(list)
    families: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for e in played:
        by_task[e.task_id].append(e.success)
        family = families[e.category or "(none)"]
        family[0] += e.success
        family[1] += 1
    k = min((len(v) for v in by_task.values()), default=1)
    row = Row(
        label,
        episodes[0].model or "" if episodes else "",
        len(episodes),
        sum(e.success for e in episodes),
        statistics.median(steps) if steps else 0.0,
        sum(1 for e in episodes if e.error),
        mean_reward=statistics.fmean(e.reward for e in played) if played else 0.0,
        tasks=len({e.task_id for e in episodes}),
        k=k,
        run_id=run_id,
        corrupt=len(entries) - len(episodes),
        outcomes={(e.task_id, e.attempt): e.success for e in played},  # a pair with a lost episode is left out
        families={f: (v[0], v[1]) for f, v in sorted(families.items())},
        steps=steps,
        manager_calls=sum(e.manager_calls for e in episodes),
        cache_hits=sum(e.cache_hits for e in episodes),
        cache_misses=sum(e.cache_misses for e in episodes),
    )
    if k > 1:
        row.pass_at_k = statistics.fmean(pass_at_k(len(v), sum(v), k) for v in by_task.values())
        row.pass_hat_k = statistics.fmean(pass_hat_k(len(v), sum(v), k) for v in by_task.values())
    return row


def summarise(store: Store, runs: list[tuple[str, str]]) -> list[Row]:
    """A row per (mode, run_id) (see `summary_row`), read from each run's index object (store/browse.py: written
    when its job ended), so a report over 10,000 episodes reads one object a run."""
    return [summary_row(mode, run_index(store, mode, run_id), run_id) for mode, run_id in runs]


def _rate(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


FIGURES = (
    "| Tasks | Episodes | Success rate (95% CI) | pass@k | pass^k | Median steps | Mean reward | Env/service errors |",
    "---:|" * 8,
)  # the header and alignment of `figure_cells`


def viewer_address(settings: Settings) -> str:
    """The trajectory viewer the reports link to: the rollout API the CLI submits jobs to (LORALOOP_API_URL),
    else that API's default address on this machine."""
    return settings.api_url or f"http://127.0.0.1:{ROLLOUT_API_PORT}"


def episodes_url(viewer_url: str, mode: str, run_id: str, outcome: str = "", model: str = "") -> str:
    """The trajectory viewer's page of a run's episodes, of one outcome and one model where given: the
    episodes behind a number of a report."""
    query = urlencode({name: value for name, value in (("outcome", outcome), ("model", model)) if value})
    return f"{viewer_url.rstrip('/')}/ui/runs/{mode}/{run_id}" + (f"?{query}" if query else "")


def figure_cells(r: Row, link: Callable[[str], str] | None = None) -> str:
    """A row's figures as the Markdown cells under FIGURES: success with its 95% interval, pass@k and pass^k
    (k attempts per task), median steps, mean reward, and errors of the environment or service counted
    apart (with the episodes replayed after one, which then ended on their own); corrupt episodes, left out of
    these, beside the episode count. With `link` (an outcome, '' for all,
    to a viewer URL) the episode, solved, error and corrupt counts link to the episodes behind them."""

    def count(n: int, outcome: str) -> str:
        return f"[{n}]({link(outcome)})" if link and n else str(n)

    low, high = r.interval
    k = f" (k={r.k})" if r.k > 1 else ""
    corrupt = f" (+{count(r.corrupt, 'corrupt')} corrupt)" if r.corrupt else ""
    replays = f" ({r.retries} replayed)" if r.retries else ""
    return (
        f" {r.tasks} | {count(r.episodes, '')}{corrupt} | {r.success_rate:.1%} ({count(r.solved, 'solved')}/"
        f"{r.played}; {low:.0%}–{high:.0%}) | {_rate(r.pass_at_k)}{k} | {_rate(r.pass_hat_k)}{k} | "
        f"{r.median_steps:g} | {r.mean_reward:.3f} | {count(r.errors, 'error')}{replays} |"
    )


def markdown_table(rows: list[Row], viewer_url: str = "") -> str:
    """The results as a Markdown table, a line per experiment (see `figure_cells`); with `viewer_url` (the
    rollout API) its counts link to the episodes behind them in the trajectory viewer."""
    lines = ["| Experiment | Model " + FIGURES[0], "|---|---|" + FIGURES[1]]
    for r in rows:
        link = partial(episodes_url, viewer_url, r.experiment, r.run_id) if viewer_url and r.run_id else None
        lines.append(f"| `{r.experiment}` | {r.model} |" + figure_cells(r, link))
    return "\n".join(lines) + "\n"


def paired_table(rows: list[Row]) -> str:
    """Each experiment against the first on the (task, attempt) pairs both played: who alone solved how many,
    and the exact McNemar p-value; empty with fewer than two experiments."""
    if len(rows) < 2:
        return ""
    first = rows[0]
    lines = [
        f"| `{first.experiment}` vs | Pairs | Only `{first.experiment}` solved | Only the other solved "
        "| McNemar p | At 5% |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for other in rows[1:]:
        pairs = sorted(set(first.outcomes) & set(other.outcomes))
        only_first = sum(first.outcomes[p] and not other.outcomes[p] for p in pairs)
        only_other = sum(other.outcomes[p] and not first.outcomes[p] for p in pairs)
        p_value = mcnemar(only_first, only_other)
        verdict = "significant" if p_value < 0.05 else "not significant"
        lines.append(
            f"| `{other.experiment}` | {len(pairs)} | {only_first} | {only_other} | {p_value:.3g} | {verdict} |"
        )
    return "\n".join(lines) + "\n"


def _per(count: int, episodes: int) -> str:
    return f"{count / episodes:.2f}" if episodes else "–"


def orchestrator_table(rows: list[Row]) -> str:
    """The HALO orchestrator's part per experiment: manager calls and Verified Action Cache hits, in all and per
    episode, and the cache's hit rate over its lookups; empty when no row's episodes called a manager or the
    cache (plain workers), so reports of those stay as they were."""
    if not any(r.manager_calls or r.cache_hits or r.cache_misses for r in rows):
        return ""
    lines = [
        "| Experiment | Episodes | Manager calls | per episode | Cache hits | per episode | Cache hit rate |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lookups = r.cache_hits + r.cache_misses
        lines.append(
            f"| `{r.experiment}` | {r.episodes} | {r.manager_calls} | {_per(r.manager_calls, r.episodes)} | "
            f"{r.cache_hits} | {_per(r.cache_hits, r.episodes)} | "
            f"{_rate(r.cache_hits / lookups if lookups else None)} |"
        )
    return "\n".join(lines) + "\n"


CSV_COLUMNS = (
    "experiment",
    "model",
    "tasks",
    "episodes",
    "solved",
    "success_rate",
    "ci_low",
    "ci_high",
    "k",
    "pass_at_k",
    "pass_hat_k",
    "median_steps",
    "mean_reward",
    "errors",
    "retries",
    "corrupt",
    "manager_calls",
    "cache_hits",
    "cache_misses",
)


def write_csv(rows: list[Row], path: Path, leading: Sequence[dict] = ()) -> None:
    """One line per row with every figure of the table, for a spreadsheet or pandas; `leading` (a dict per
    row, the same keys in each) puts columns of the caller's before them."""
    first = list(leading[0]) if leading else []
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(first + list(CSV_COLUMNS))
        for n, r in enumerate(rows):
            values = {
                **{c: getattr(r, c, None) for c in CSV_COLUMNS},
                "success_rate": r.success_rate,
                "ci_low": r.interval[0],
                "ci_high": r.interval[1],
            }
            writer.writerow(
                [leading[n][c] if leading else None for c in first]
                + ["" if values[c] is None else values[c] for c in CSV_COLUMNS]
            )


def viewer_links(viewer_url: str, mode: str, run_id: str) -> str:
    """Links to a run's episodes in the trajectory viewer: all, solved, failed, errors."""
    return ", ".join(
        [f"[episodes]({episodes_url(viewer_url, mode, run_id)})"]
        + [
            f"[{label}]({episodes_url(viewer_url, mode, run_id, outcome)})"
            for label, outcome in (("solved", "solved"), ("failed", "failed"), ("errors", "error"))
        ]
    )


def write_report(
    store: Store,
    runs: list[tuple[str, str]],
    out_dir: Path,
    title: str,
    viewer_url: str = "",
    retries: dict[str, int] | None = None,
) -> tuple[Path, list[Row]]:
    """Write report.md, report.csv and the charts (success.png with intervals, success_by_family.png,
    steps.png) under out_dir; return the Markdown path and the rows. With `viewer_url` (the rollout API),
    the table's counts and each run link to their episodes in the trajectory viewer; `retries` (per mode: the
    replays its job made, which the store does not hold) is shown beside the errors."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = summarise(store, runs)
    for row in rows:
        row.retries = (retries or {}).get(row.experiment, 0)
    md = out_dir / "report.md"
    paired = paired_table(rows)
    orchestrated = orchestrator_table(rows)
    md.write_text(
        f"# {title}\n\n{markdown_table(rows, viewer_url)}\n"
        + (f"## Paired comparison (same tasks and attempts)\n\n{paired}\n" if paired else "")
        + (f"## HALO orchestrator (manager, cache)\n\n{orchestrated}\n" if orchestrated else "")
        + "![success rate](success.png) ![success by family](success_by_family.png) ![steps](steps.png)\n\n"
        + "".join(
            f"- `{m}`: run `{r}`" + (f": {viewer_links(viewer_url, m, r)}" if viewer_url else "") + "\n"
            for m, r in runs
        )
    )
    write_csv(rows, out_dir / "report.csv")
    success_chart(rows, out_dir / "success.png", title)
    family_chart(rows, out_dir / "success_by_family.png", "Success by task family")
    steps_chart(rows, out_dir / "steps.png", "Steps per episode")
    return md, rows


def mean_sd(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (sd 0 for a single value)."""
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def write_learning_report(
    rates: dict[str, list[float]], episodes: dict[str, int], seeds: list[int], out_dir: Path, title: str, notes: str
) -> Path:
    """report.md (per experiment: success per seed, mean, sd, episodes) and learning.png under out_dir."""
    spread = {name: mean_sd(values) for name, values in rates.items()}
    lines = [
        f"# {title}",
        "",
        "| Model | " + " | ".join(f"seed {s}" for s in seeds) + " | mean | sd | episodes |",
        "|---|" + "---:|" * (len(seeds) + 3),
    ]
    lines += [
        f"| `{name}` | "
        + " | ".join(f"{v:.1%}" for v in values)
        + f" | {spread[name][0]:.1%} | {spread[name][1]:.1%} | {episodes[name]} |"
        for name, values in rates.items()
    ]
    lines += ["", notes, "", "![success](learning.png)"]
    report = out_dir / "report.md"
    report.write_text("\n".join(lines) + "\n")
    learning_chart(spread, out_dir / "learning.png", f"{len(seeds)} seeds")
    return report
