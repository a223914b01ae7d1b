"""One table over seeds from learning runs that did not share a store: `loraloop miniwob` / `loraloop agentbench`
runs of one seed each, on machines (or sessions) of their own, each leaving its summary.json.

Why not the run's own report: it reads the episodes from the store, and a seed run on another machine has its
episodes in another store. What the table needs, each seed's solved and played per model, is in summary.json, so
this reads only those, refuses plans that differ in anything but their seeds (the field named), and prints per
model each seed's rate, the mean and sd over seeds and the seeds' episodes pooled with a Wilson interval, for the
held-out set and the transfer set; `--out DIR` writes report.md and learning.png there.

    python bench/learning_seeds.py machine-a/summary.json machine-b/summary.json --out DIR
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "services"))

from loraloop.charts import learning_chart  # noqa: E402
from loraloop.evaluate.report import mean_sd  # noqa: E402
from loraloop.evaluate.stats import wilson  # noqa: E402

MODELS = ("base", "BC", "BC+RL")
SETS = {"seeds": "held-out seeds of the trained types", "transfer": "held-out types (transfer)"}


def load(paths: list[Path]) -> tuple[dict, dict[str, dict[str, dict]], list[str]]:
    """The shared plan, per set each seed's rows by model, and a line per file with its seeds and machine (the
    dtype differs between machines); fails naming the file and field that disagree, or a seed two files hold."""
    plan: dict | None = None
    first = None
    sets: dict[str, dict[str, dict]] = {name: {} for name in SETS}
    origins = []
    for path in paths:
        try:
            summary = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise SystemExit(f"{path}: not a readable summary.json ({exc})") from exc
        if not isinstance(summary, dict) or not isinstance(summary.get("plan"), dict):
            raise SystemExit(f"{path}: no 'plan' object (a learning run's summary.json has one)")
        this = {k: v for k, v in summary["plan"].items() if k != "seeds"}
        if plan is None:
            plan, first = this, path
        for key in sorted(set(plan) | set(this)):
            if plan.get(key) != this.get(key):
                raise SystemExit(
                    f"{path}: plan field {key!r} is {this.get(key)!r}, {first} has {plan.get(key)!r}: "
                    "seeds of different plans are not one table"
                )
        for name in SETS:
            for seed, rows in (summary.get(name) or {}).items():
                if seed in sets[name]:
                    raise SystemExit(f"{path}: seed {seed} of {name!r} is in another summary too")
                sets[name][seed] = rows
        origins.append(
            f"- `{path}`: seed(s) {', '.join(summary.get('seeds') or {}) or 'none'}, "
            f"machine {json.dumps(summary.get('machine') or 'not recorded')}, "
            f"{sum((summary.get('stages_s') or {}).values()):,.0f} s of stages"
        )
    if plan is None:
        raise SystemExit("no summary.json given")
    return plan, sets, origins


def table(per_seed: dict[str, dict]) -> tuple[list[str], dict[str, tuple[float, float]]]:
    """Markdown rows (model: each seed's solved/played, mean, sd, pooled with its 95% Wilson interval) and the
    (mean, sd) by model for the chart; base is one greedy evaluation, counted once in the pool."""
    seeds = sorted(per_seed, key=int)
    lines = [
        "| model | " + " | ".join(f"seed {s}" for s in seeds) + " | mean | sd | pooled (95% Wilson) |",
        "|---|" + "---:|" * (len(seeds) + 3),
    ]
    spread = {}
    for model in MODELS:
        rows = {s: per_seed[s][model] for s in seeds if model in per_seed[s]}
        if not rows:
            continue
        rates = [r["solved"] / r["episodes"] if r["episodes"] else 0.0 for r in rows.values()]
        spread[model] = mean_sd(rates)
        pool = list(rows.values())[:1] if model == "base" else list(rows.values())
        solved, played = sum(r["solved"] for r in pool), sum(r["episodes"] for r in pool)
        low, high = wilson(solved, played)
        cells = [f"{rows[s]['solved']}/{rows[s]['episodes']}" if s in rows else "–" for s in seeds]
        lines.append(
            f"| {model} | {' | '.join(cells)} | {spread[model][0]:.1%} | {spread[model][1]:.1%} | "
            f"{solved}/{played} = {solved / played if played else 0:.1%} ({low:.0%}–{high:.0%}) |"
        )
    return lines, spread


def main() -> None:
    """Read the summaries, print the tables, and with --out write report.md and learning.png."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("summaries", nargs="+", type=Path, help="learning runs' summary.json files")
    parser.add_argument("--out", type=Path, help="a folder for report.md and learning.png")
    args = parser.parse_args()
    plan, sets, origins = load(args.summaries)
    lines = [f"# {plan.get('name', 'learning')}: base → BC → BC+RL over seeds", "", *origins, ""]
    lines += [f"The plan but its seeds: `{json.dumps(plan)}`", ""]
    spread = {}
    for name, title in SETS.items():
        if sets[name]:
            rows, spread_of = table(sets[name])
            spread = spread or spread_of
            lines += [f"## {title}", "", *rows, ""]
    markdown = "\n".join(lines)
    print(markdown)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        if spread:
            learning_chart(spread, args.out / "learning.png", f"held-out success over {len(sets['seeds'])} seed(s)")
            markdown += "\n![learning](learning.png)\n"
        (args.out / "report.md").write_text(markdown)


if __name__ == "__main__":
    main()
