"""BrowserGym rollouts (MiniWoB++) through the embedded rollout: the scripted solver's episodes stored as loraloop's
typed records, each on the seed its rollout seed picks, and exported to BC."""

import json

from loraloop.task_registry import load_registry


def test_miniwob_teacher_rollout_stores_episodes_and_exports_bc(tmp_path, chromium, settings_for):
    from loraloop.datasets.export import export
    from loraloop.rollout.experiments import get_experiment
    from loraloop.rollout.sampler import plan_rollout
    from loraloop.service.client import execute
    from loraloop.store import open_store
    from loraloop.store.trajectories import iter_episodes

    settings = settings_for()
    registry = load_registry("configs/tasks/miniwob")
    specs = plan_rollout(
        registry,
        "configs/tasks/miniwob",
        get_experiment("configs/experiments.yaml", "miniwob_teacher"),
        run_id="mw-1",
        subset="train+click-button,enter-text,email-inbox",
        sample_size=None,
        rollouts_per_task=2,
        seed=1,
        task_seed=0,
        temperature=None,
    )
    summaries = execute(specs, settings, quiet=True)
    assert len(summaries) == 6 and all(s.success for s in summaries), summaries
    episodes = list(iter_episodes(open_store(settings=settings), "trajectories/miniwob_teacher/mw-1/"))
    assert len(episodes) == 6
    for episode in episodes:
        assert episode.start.env == "browsergym" and episode.start.goal and episode.end.reward == 1.0
        assert all(step.action_text and "/miniwob/" in step.url for step in episode.steps)
        setup = episode.start.events[0]  # the seed played, from the rollout seed: attempts 0 and 1 are seeds 0 and 1
        assert setup["type"] == "task_setup" and setup["seed"] == episode.start.seed % 50
    manifest = export(open_store(settings=settings), "trajectories/miniwob_teacher/mw-1/", tmp_path / "ds", ["bc"])
    rows = [json.loads(line) for line in (tmp_path / "ds" / "bc.jsonl").read_text().splitlines()]
    assert manifest["rows"]["bc"] == len(rows) == sum(len(e.steps) for e in episodes)
    prompt = rows[0]["prompt"][-1]["content"]  # the web prompt layout: goal, past actions, current page
    assert prompt.startswith("# Goal\n") and "# Accessibility tree" in prompt
    assert "StaticText with a bid can be clicked" in rows[0]["prompt"][0]["content"]
