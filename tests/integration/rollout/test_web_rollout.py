"""Web rollouts in Chromium on the bundled sites: trajectories and screenshots in the store, exported to BC and GRPO."""

import json

from loraloop.task_registry import load_registry


def test_web_rollout_stores_trajectories_screenshots_and_exports_bc(tmp_path, sites_url, settings_for):
    from loraloop.datasets.export import export
    from loraloop.rollout.experiments import get_experiment
    from loraloop.rollout.sampler import plan_rollout
    from loraloop.service.client import execute
    from loraloop.store import open_store
    from loraloop.store.trajectories import iter_episodes

    settings = settings_for(sites_url=sites_url)
    registry = load_registry("configs/tasks/web")
    specs = plan_rollout(
        registry,
        "configs/tasks/web",
        get_experiment("configs/experiments.yaml", "web_teacher_screens"),
        run_id="web-1",
        subset="test",
        sample_size=3,
        rollouts_per_task=1,
        seed=1,
        task_seed=7,
        temperature=None,
    )
    summaries = execute(specs, settings, quiet=True)
    assert len(summaries) == 3 and all(s.success for s in summaries), summaries
    store = open_store(settings=settings)
    episodes = list(iter_episodes(store, "trajectories/web_teacher_screens/web-1/"))
    assert len(episodes) == 3
    for episode in episodes:
        assert episode.start.env == "web" and episode.start.goal
        for step in episode.steps:
            assert step.url.startswith(sites_url) and step.action_text
            assert store.get_bytes(step.screenshot).startswith(b"\x89PNG")
        progress = [step.progress_score for step in episode.steps]  # the teacher's episodes get scores too
        assert progress == sorted(progress) and progress[-1] == episode.end.max_progress_score == 1.0
    manifest = export(store, "trajectories/web_teacher_screens/web-1/", tmp_path / "ds", ["bc", "grpo"])
    rows = [json.loads(line) for line in (tmp_path / "ds" / "bc.jsonl").read_text().splitlines()]
    assert manifest["rows"]["bc"] == len(rows) == sum(len(e.steps) for e in episodes)
    assert {r["site_id"] for r in rows} <= {"shopzon", "quickmail"} and all("Action:" in r["action"] for r in rows)
    prompt = rows[-1]["prompt"][-1]["content"]  # the web prompt: goal, past actions, current page
    assert prompt.startswith("# Goal\n") and "# Past actions\n1. " in prompt and "# Accessibility tree" in prompt
    grpo = [json.loads(line) for line in (tmp_path / "ds" / "grpo.jsonl").read_text().splitlines()]
    assert grpo and all(set(r["action_returns"].values()) == {1.0} for r in grpo)
    assert all(action.startswith("web: ") for r in grpo for action in r["action_returns"])
