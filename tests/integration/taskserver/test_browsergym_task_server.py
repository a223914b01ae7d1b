"""BrowserGym tasks (MiniWoB++) through the Task Server API (AReaL): a client asks for a seed of the task's split in
the start's config, plays it to MiniWoB's own reward, and the episode is stored as the rollout stores one; a seed
outside the split is a 400 naming it, before any environment is made."""

from __future__ import annotations

import pytest

from loraloop.envs.browsergym.teacher import goal_of, solve

pytestmark = pytest.mark.usefixtures("chromium")


def test_a_miniwob_episode_on_an_asked_seed_through_the_task_server(redis_url, settings_for):
    from fastapi.testclient import TestClient

    from loraloop.store import open_store
    from loraloop.store.trajectories import iter_episodes
    from loraloop.task_registry import load_registry
    from loraloop.taskserver.app import create_app, open_states

    registry = load_registry("configs/tasks/miniwob")
    task = registry.get("heldout-miniwob.enter-text")
    settings = settings_for(broker_url=redis_url)
    app = create_app(registry, "mw-test", settings, run_id="r1", states=open_states(settings, "mw-test"))
    with TestClient(app) as client:
        assert "browsergym" in client.get("/api/task/info").json()["env_kinds"]
        bad = client.post("/api/episode/start", json={"sample_id": task.index, "config": {"seed": 3}})
        assert bad.status_code == 400 and "seed 3 is outside split 'heldout-seed'" in bad.json()["detail"], bad.text
        assert client.get("/api/health").json()["active_episodes"] == 0
        start = client.post("/api/episode/start", json={"sample_id": task.index, "config": {"seed": 1004}}).json()
        page = start["observation"]["content"][-1]["content"]
        goal, history, reply = goal_of(page), [], None
        for turn in range(6):
            action = solve("enter-text", goal, page, turn, history)
            history.append(action)
            reply = client.post(
                "/api/episode/step",
                json={"episode_id": start["episode_id"], "action": {"content": f"Action: {action}"}},
            ).json()
            if reply["done"]:
                break
            page = reply["observation"]["content"]
        assert reply["done"] and reply["reward"] == 1.0
    [played] = iter_episodes(open_store(settings=settings), "trajectories/mw-test/r1/")  # the refused one never began
    assert played.start.env == "browsergym" and played.start.events[0]["seed"] == 1004 and played.end.success
