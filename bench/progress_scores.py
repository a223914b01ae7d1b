"""Progress scores on the bundled web tasks: does the milestone heuristic tell a task's solution from its wrong path?

    .venv/bin/python bench/progress_scores.py [--split test] [--out [PATH]]

Every bundled web task ships a scripted `solution` and a `wrong_path` (same site, a plausible mistake; the site
grades it a failure). Both are played in Chromium on the bundled sites through EpisodeSession, as a rollout records
them, and compared by what `export --pairing_strategy progress_ranked` ranks on:

- max progress before the final answer (the heuristic's own part: milestones only, no grading);
- max progress of the episode (a solved episode's final step is 1.0);
- whether datasets.states.rank puts the solution first (progress, then return, steps, recovery actions).

No target is set by the issue: the figures say how often milestones alone separate right from wrong (a wrong path
that stars instead of unstarring reaches the same milestones, so ties are expected), and the ranking must put every
solution first (the script exits 1 otherwise).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from results import add_out, machine, report  # noqa: E402

from loraloop.datasets.states import rank  # noqa: E402
from loraloop.envs.web.env import WebEnv  # noqa: E402
from loraloop.envs.web.teacher import ScriptedWebTeacher  # noqa: E402
from loraloop.rollout.session import EpisodeSession  # noqa: E402
from loraloop.settings import Settings  # noqa: E402
from loraloop.store.backends import FileStore  # noqa: E402
from loraloop.store.records import Provenance  # noqa: E402
from loraloop.store.trajectories import iter_episodes  # noqa: E402
from loraloop.task_registry import load_registry  # noqa: E402
from loraloop_sites import serving  # noqa: E402

PATHS = {"solution": 0, "wrong_path": 1}  # the attempt number each is stored under


def play(store, task, settings: Settings, path: str) -> None:
    """One scripted episode of `task` (its solution or its wrong path), stored as a rollout stores it."""
    steps = getattr(task, path)
    env = WebEnv(task, settings, max_rounds=max(15, len(steps)))  # some solutions take more than 15 steps
    teacher = ScriptedWebTeacher(task, env.origin, steps=steps, page=lambda: env.observation)
    session = EpisodeSession(
        store, env, task, mode="bench", run_id="progress", attempt=PATHS[path], provenance=Provenance(policy="scripted")
    )
    try:
        session.start()
        while not session.done:
            session.act(teacher.act(session.prompt()).text, source="teacher")
    finally:
        env.close()
    session.finish()


def before_final(episode) -> float:
    """The highest progress before the final step (milestones only: the final step's 1.0 comes from grading)."""
    scores = [s.progress_score for s in episode.steps[:-1] if s.progress_score is not None]
    return max(scores, default=0.0)


def main() -> int:
    """Play every task's two paths, then print per site how progress and the ranking tell them apart."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="", help="only tasks of this split (train, test); default: all")
    add_out(parser, "progress_scores")
    args = parser.parse_args()
    tasks = [
        t
        for t in load_registry(str(ROOT / "configs/tasks/web")).tasks
        if t.solution and t.wrong_path and (not args.split or t.split == args.split)
    ]
    with tempfile.TemporaryDirectory() as tmp, serving() as url:
        store = FileStore(Path(tmp))
        settings = Settings(sites_url=url)
        for task in tasks:
            for path in PATHS:
                play(store, task, settings, path)
        by_task: dict[str, dict[int, object]] = defaultdict(dict)
        for episode in iter_episodes(store, "trajectories/bench/progress/"):
            by_task[episode.start.task_id][episode.start.attempt_idx] = episode
    sites: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    misranked, misgraded, behind = [], [], []
    for task in tasks:
        solution, wrong = by_task[task.index][0], by_task[task.index][1]
        site = sites[task.site_id]
        if not solution.success or wrong.success:
            misgraded.append(
                f"{task.index} (solution {solution.end.status}, {solution.success}; wrong path "
                f"{wrong.end.status}, {wrong.success})"
            )
        site["sol_before"].append(before_final(solution))
        site["wrong_before"].append(before_final(wrong))
        site["sol_max"].append(solution.end.max_progress_score)
        site["wrong_max"].append(wrong.end.max_progress_score)
        site["separated"].append(before_final(solution) > before_final(wrong))
        site["tied"].append(before_final(solution) == before_final(wrong))
        if before_final(solution) < before_final(wrong):
            behind.append(f"{task.index} ({before_final(solution):.2f} < {before_final(wrong):.2f})")
        site["ranked"].append(rank([wrong, solution])[0] is solution)
        if rank([wrong, solution])[0] is not solution:
            misranked.append(task.index)
    mean = lambda values: sum(values) / len(values)  # noqa: E731
    lines = [
        "# Progress scores on the bundled web tasks",
        "",
        machine(),
        "",
        f"{len(tasks)} tasks, each played twice in Chromium through EpisodeSession: its scripted solution and "
        "its wrong path (graded: solutions pass, wrong paths fail).",
        "",
        "| site | tasks | progress before the answer: solution / wrong path (mean) | solution ahead on "
        "milestones alone | tied | max progress: solution / wrong path (mean) | ranked first by "
        "`progress_ranked` |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, site in sorted(sites.items()):
        n = len(site["ranked"])
        lines.append(
            f"| {name} | {n} | {mean(site['sol_before']):.2f} / {mean(site['wrong_before']):.2f} | "
            f"{sum(site['separated'])}/{n} | {sum(site['tied'])}/{n} | {mean(site['sol_max']):.2f} / "
            f"{mean(site['wrong_max']):.2f} | {sum(site['ranked'])}/{n} |"
        )
    lines += [
        "",
        f"Wrong path ahead on milestones: {', '.join(behind) or 'none'}.",
        "",
        f"Graded as expected (solution passes, wrong path fails): "
        f"{'all' if not misgraded else 'not ' + '; '.join(misgraded)}. "
        f"Solutions ranked first: {'all' if not misranked else 'not ' + ', '.join(misranked)}.",
    ]
    report("\n".join(lines), args.out)
    return 0 if not misgraded and not misranked else 1


if __name__ == "__main__":
    sys.exit(main())
