"""Progress scores along the teacher's real episodes on the bundled sites, a generic site, and kinds without a score."""

import json
from dataclasses import replace
from pathlib import Path

import pytest

from loraloop.envs.web.progress import WebProgress, page_type
from loraloop.kinds.registry import env_kind
from loraloop.task_registry import load_registry
from tests.helpers import step_info

PAGES = Path(__file__).parents[1] / "fixtures" / "web_pages"
TASKS = {t.id: t for t in load_registry("configs/tasks/web").tasks}


def scores(task, episode: dict) -> list[float]:
    tracker = WebProgress(task)
    tracker.start(episode["first_observation"])
    return [
        tracker.update(s["observation"], None, s["info"].get("action"), step_info(s["info"])) for s in episode["steps"]
    ]


@pytest.mark.parametrize(
    "name, expected",
    [
        ("shop-2", [0.0, 0.2, 0.4, 0.4, 0.6, 0.8, 0.8, 1.0, 1.0]),  # search, product, cart, checkout, order placed
        ("shop-5", [0.333, 0.667, 1.0, 1.0]),  # orders, the order, cancelled
        ("mail-9", [0.25, 0.5, 0.75, 1.0, 1.0]),  # the email, composing, wrote, sent
        ("mail-4", [0.5, 1.0, 1.0]),  # the email, archived
        ("mail-2", [0.5, 1.0, 1.0]),  # the email, starred (the same page, changed)
        ("mail-19", [0.0, 0.5, 1.0, 1.0]),  # searched, opened
    ],
)
def test_teacher_solutions_climb_the_site_milestones(name, expected):
    episode = json.loads((PAGES / f"{name}.json").read_text())
    assert scores(TASKS[name], episode) == expected


def test_every_recorded_teacher_episode_never_falls_and_ends_at_one():
    for path in sorted(PAGES.glob("*.json")):
        episode = json.loads(path.read_text())
        found = scores(TASKS[episode["task"]], episode)
        assert found == sorted(found) and found[-1] == 1.0 and found[0] < 1.0, (path.name, found)


def test_the_same_pages_toward_another_goal_score_lower():
    """shop-2's pages (it buys gel pens) against shop-16's goal (open order o1001): no wanted milestone reached."""
    episode = json.loads((PAGES / "shop-2.json").read_text())
    episode["steps"][-1]["info"]["success"] = False
    assert scores(TASKS["shop-16"], episode) == [0.0] * len(episode["steps"])


def test_a_click_that_changes_nothing_on_an_email_is_no_change():
    episode = json.loads((PAGES / "mail-2.json").read_text())
    opened = episode["steps"][0]
    idle = {"action": "", "info": {"action": "click('21')"}, "observation": opened["observation"]}
    episode["steps"] = [opened, idle, idle]
    assert scores(TASKS["mail-2"], episode) == [0.5, 0.5, 0.5]


def test_a_failed_final_answer_keeps_the_score_reached():
    episode = json.loads((PAGES / "shop-2.json").read_text())
    episode["steps"] = episode["steps"][:4] + [episode["steps"][-1]]
    episode["steps"][-1]["info"]["success"] = False
    assert scores(TASKS["shop-2"], episode) == [0.0, 0.2, 0.4, 0.4, 0.4]


def page(url: str, tree: str = "[1] button 'Go'") -> str:
    return f"# Current page\nURL: {url}\nTitle: t\n\n# Accessibility tree\n{tree}"


def test_other_sites_score_new_page_types_and_fields_filled():
    task = replace(TASKS["shop-2"], site_id="elsewhere")
    tracker = WebProgress(task)
    tracker.start(page("http://x.test/home"))
    assert tracker.update(page("http://x.test/home"), None, "click('1')", step_info({})) == 0.0  # nothing new
    assert tracker.update(page("http://x.test/item/17"), None, "click('1')", step_info({})) == 0.2  # 1 point: 1/(1+4)
    assert tracker.update(page("http://x.test/item/18"), None, "click('1')", step_info({})) == 0.2  # same page type
    assert tracker.update(page("http://x.test/item/18"), None, "fill('4', 'a')", step_info({})) == 0.333
    assert (
        tracker.update(page("http://x.test/item/18"), None, "fill('4', 'b')", step_info({})) == 0.333
    )  # the same field
    assert (
        tracker.update(page("http://x.test/item/18"), None, "fill('5', 'b')", step_info({"error": "no element"}))
        == 0.333
    )
    assert tracker.update(None, None, "send_msg_to_user('done')", step_info({"success": True})) == 1.0
    assert page_type("/item/18/reviews", {"page": ["2"]}) == "/item/#/reviews?page"


def test_shell_and_tau2_have_no_score():
    """Kinds without a progress facet: their sessions record no score (test_halo_agent.py plays a shell one)."""
    assert env_kind("web").agent.progress is WebProgress
    for kind in ("shell", "tau2", "browsergym"):
        assert env_kind(kind).agent.progress is None
