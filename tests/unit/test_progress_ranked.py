"""`export --pairing_strategy progress_ranked` on stored web-like episodes: ranked by progress, steps, recoveries."""

import json

from loraloop.datasets.export import export
from loraloop.datasets.states import rank
from loraloop.store.backends import FileStore
from loraloop.store.records import EpisodeEnd, EpisodeStart, Step
from loraloop.store.trajectories import EpisodeRecorder, iter_episodes

PAGE = "# Current page\nURL: http://localhost:8090/shop\n\n# Accessibility tree\n[11] searchbox 'Search'"


def act(bid: str) -> str:
    return f"Think: go.\nAction: click('{bid}')"


def web_episode(store, attempt: int, success: bool, steps: list[tuple[str, float, str | None]]) -> None:
    """A stored web episode of task shop-1: steps are (action, progress after it, recovery trigger or None); each
    step's page names the actions taken so far, so episodes share a state exactly while their histories agree."""
    rec = EpisodeRecorder(store, "halo", "r", "shop-1", attempt)
    rec.add(
        EpisodeStart(
            task_id="shop-1",
            mode="halo",
            run_id="r",
            env="web",
            prompt_style="web",
            category="shopzon",
            system_prompt="sys",
            first_observation=f"# Goal\nBuy it.\n\n{PAGE}",
        )
    )
    history = PAGE
    for i, (action, progress, recovery) in enumerate(steps):
        rec.add(
            Step(
                step_idx=i,
                observation=history,
                raw_output=action,
                action_source="recovery" if recovery else "worker",
                recovery=recovery,
                progress_score=progress,
            )
        )
        history += f"\n[{i}] link '{action}'"
    scores = [p for _, p, _ in steps]
    rec.add(
        EpisodeEnd(
            success=success,
            reward=float(success),
            total_steps=len(steps),
            max_progress_score=max(scores),
            final_progress_score=scores[-1],
        )
    )
    rec.flush()


def read(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_rank_by_progress_then_return_steps_and_recoveries(tmp_path):
    store = FileStore(tmp_path / "store")
    web_episode(store, 0, False, [(act("1"), 0.2, None), (act("2"), 0.6, None)])  # went far, failed
    web_episode(store, 1, False, [(act("1"), 0.2, None)])  # little progress, short
    web_episode(store, 2, True, [(act("1"), 0.2, None), (act("3"), 0.6, None), (act("4"), 1.0, None)])
    web_episode(store, 3, False, [(act("1"), 0.2, None), (act("5"), 0.6, "loop")])  # as far as 0, with a recovery
    web_episode(store, 4, False, [(act("1"), 0.2, None), (act("6"), 0.6, None), (act("7"), 0.6, None)])
    episodes = list(iter_episodes(store, "trajectories/halo/r/"))
    order = [e.key.rsplit("_", 1)[-1] for e in rank(episodes)]
    # solved first; then 0.6 progress: fewer steps first, and at equal steps the one without a recovery; then 0.2
    assert order == ["2.jsonl", "0.jsonl", "3.jsonl", "4.jsonl", "1.jsonl"]


def test_progress_ranked_bc_keeps_the_top_and_dpo_pairs_best_with_worst(tmp_path):
    store = FileStore(tmp_path / "store")
    web_episode(store, 0, False, [(act("1"), 0.2, None), (act("2"), 0.6, None)])
    web_episode(store, 1, False, [(act("8"), 0.0, None)])  # no progress at all: the worst
    web_episode(store, 2, False, [(act("1"), 0.2, None), (act("3"), 0.2, None), (act("4"), 0.4, None)])
    manifest = export(store, "trajectories", tmp_path / "ds", ["bc", "dpo"], pairing="progress_ranked", top_percent=0.4)
    bc = read(tmp_path / "ds" / "bc.jsonl")
    # none succeeded: the top ceil(3*0.4)=2 by progress are kept (0: 0.6, then 2: 0.4), not the one without progress
    assert [(r["action"], r["step_idx"]) for r in bc] == [
        (act("1"), 0),
        (act("2"), 1),
        (act("1"), 0),
        (act("3"), 1),
        (act("4"), 2),
    ]
    dpo = read(tmp_path / "ds" / "dpo.jsonl")
    assert manifest["rows"]["dpo"] == len(dpo) == 1  # best (0) against worst (1), in the one state they share
    assert dpo[0]["chosen"][0]["content"] == act("1") and dpo[0]["rejected"][0]["content"] == act("8")
    assert dpo[0]["state_key"].startswith("progress_ranked_shop-1:")
    assert export(store, "trajectories", tmp_path / "default", ["bc"])["rows"]["bc"] == 0  # default: successes only


def test_no_pair_when_the_best_is_no_better_than_the_worst(tmp_path):
    store = FileStore(tmp_path / "store")
    web_episode(store, 0, False, [(act("1"), 0.2, None)])
    web_episode(store, 1, False, [(act("2"), 0.2, None)])
    manifest = export(store, "trajectories", tmp_path / "ds", ["dpo"], pairing="progress_ranked")
    assert manifest["rows"]["dpo"] == 0
