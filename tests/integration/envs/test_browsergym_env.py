"""The browsergym kind on real Chromium and MiniWoB++'s real pages (served on loopback): BrowserGym's own task code
sets up and grades, loraloop's pool, actions and observation; the bad input issue 28 lists, each named."""

from __future__ import annotations

import socket

import pytest

from loraloop.envs.base import EnvOptions
from loraloop.envs.browsergym.env import BrowserGymEnv
from loraloop.envs.browsergym.miniwob import local_url
from loraloop.envs.browsergym.teacher import goal_of, nodes, solve
from loraloop.errors import ConfigError, EnvironmentFailure, ServiceUnavailable, TaskFormatError
from loraloop.kinds.browsergym import preflight
from loraloop.kinds.registry import env_kind
from loraloop.task_registry import load_registry
from tests.helpers import free_port

pytestmark = pytest.mark.usefixtures("chromium")


@pytest.fixture(scope="module")
def registry():
    return load_registry("configs/tasks/miniwob")


def play(env: BrowserGymEnv, task_type: str, observation: str, limit: int = 15):
    """The scripted solver's episode from `observation` on; the last step."""
    goal, history, step = goal_of(observation), [], None
    for turn in range(limit):
        action = solve(task_type, goal, observation, turn, history)
        history.append(action)
        step = env.step(action)
        if step.done:
            return step
        observation = step.observation
    return step


def test_a_miniwob_episode_is_browsergyms_task_in_our_env(registry, settings_for):
    """Goal and reward come from MiniWoB's own JS through BrowserGym's task; the seed is the split's."""
    task = registry.get("train-miniwob.click-button")
    env = env_kind("browsergym").envs.make_env(task, settings_for(), EnvOptions(config={"seed": 3}))
    try:
        observation, info = env.reset(seed=123)
        assert info.seed == 3 and info.details["task_id"] == "miniwob.click-button" and info.url.startswith(local_url())
        assert observation.startswith("# Goal\nClick on the ") and "] button '" in observation
        step = play(env, "click-button", observation)
        assert step.terminated and step.reward == 1.0 and step.info.details["task_info"]["RAW_REWARD_GLOBAL"] > 0
    finally:
        env.close()
    env = env_kind("browsergym").envs.make_env(task, settings_for(), EnvOptions())
    try:
        _, info = env.reset(seed=1207)  # no seed asked: the rollout seed picks one of the split's 50
        assert info.seed == 1207 % 50
    finally:
        env.close()


def test_clickable_text_without_a_role_gets_its_elements_bid(registry, settings_for):
    """The trap: email-inbox's senders are divs that reach the AX tree only as StaticText; they carry the div's bid,
    and clicking it opens the email."""
    env = BrowserGymEnv(registry.get("train-miniwob.email-inbox"), settings_for())
    try:
        observation, _ = env.reset(options={"seed": 0})
        sender = goal_of(observation).split("email by ", 1)[1].split()[0]
        texts = [n for n in nodes(observation) if n.role == "StaticText" and n.name == sender]
        assert texts and texts[0].bid, observation
        step = env.step(f"click({texts[0].bid!r})")
        assert step.info.error is None and any(n.name == "Reply" for n in nodes(step.observation))
    finally:
        env.close()


def test_a_submenu_is_reached_by_hovering_as_the_solver_plays_it(registry, settings_for):
    """click-menu (teacher_navigation.menu_path): the submenu reaches the tree only after a hover and a wait, and
    the path's last item, clicked, is MiniWoB's reward 1 (seed 2's path is three menus deep)."""
    env = BrowserGymEnv(registry.get("train-miniwob.click-menu"), settings_for())
    try:
        observation, _ = env.reset(options={"seed": 2})
        assert goal_of(observation).count(">") == 2
        step = play(env, "click-menu", observation)
        assert step.terminated and step.reward == 1.0
        assert step.info.action_kind == "click"  # the last item; the menus above it were hovered, never clicked
    finally:
        env.close()


def test_an_unknown_task_type_is_named_with_the_closest_ones(tmp_path):
    (tmp_path / "registry.yaml").write_text("env: browsergym\nsets:\n  - split: train\n    files: t.jsonl\n")
    (tmp_path / "t.jsonl").write_text('{"task": "miniwob.click-buton", "seeds": [0, 9]}\n')
    with pytest.raises(
        TaskFormatError,
        match=r"t\.jsonl: task 0: unknown task type 'miniwob\.click-buton'.*"
        r"miniwob\.click-button",
    ):
        load_registry(tmp_path)


def test_a_seed_outside_the_split_is_refused_before_any_page_opens(registry, settings_for):
    task = registry.get("heldout-miniwob.click-button")  # held-out seeds 1000-1019
    with pytest.raises(
        ConfigError,
        match=r"seed 7 is outside split 'heldout-seed' of miniwob\.click-button "
        r"\(seeds 1000-1019, configs/tasks/miniwob/heldout_seeds\.jsonl#\d+\)",
    ):
        env_kind("browsergym").envs.make_env(task, settings_for(), EnvOptions(config={"seed": 7}))
    env = env_kind("browsergym").envs.make_env(task, settings_for(), EnvOptions())
    with pytest.raises(ConfigError, match="seed '1000' is outside"):
        env.reset(options={"seed": "1000"})
    assert env.context is None and env.page is None
    observation, info = env.reset(options={"seed": 1019})  # the same env plays a seed of the split
    assert info.seed == 1019 and "# Goal" in observation
    env.close()


def test_an_action_on_a_missing_bid_costs_the_step_and_loses_nothing(registry, settings_for):
    env = BrowserGymEnv(registry.get("train-miniwob.enter-text"), settings_for())
    try:
        observation, _ = env.reset(options={"seed": 2})
        step = env.step("click('9999')")
        assert not step.done and step.reward == 0
        assert step.info.error == "no element with bid '9999' on the page"
        assert "# Error from the last action\nno element with bid '9999' on the page" in step.observation
        step = env.step("fill('a12', 'x')")
        assert "no element with bid 'a12'" in step.info.error
        assert play(env, "enter-text", observation.split("\n\n# Open tabs", 1)[0] + step.observation).reward == 1.0
    finally:
        env.close()


def test_a_page_that_never_loads_fails_reset_naming_the_url_then_the_next_episode_works(registry, settings_for):
    task = registry.get("train-miniwob.click-test")
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/miniwob/"
        env = BrowserGymEnv(task, settings_for(miniwob_url=url, web_load_timeout_ms=1500))
        with pytest.raises(
            EnvironmentFailure,
            match=rf"train-miniwob\.click-test \(seed 0\): miniwob\.click-test "
            rf"did not set up from {url}: .*[Tt]imeout",
        ):
            env.reset(seed=0)
        assert env.context is None and env.page is None  # its context closed with it
    env = BrowserGymEnv(task, settings_for())
    try:
        assert "# Goal" in env.reset(seed=0)[0]
    finally:
        env.close()


def test_miniwob_url_pointing_nowhere_is_named(registry, settings_for):
    task = registry.get("train-miniwob.click-test")
    nowhere = f"http://127.0.0.1:{free_port()}/miniwob/"
    with pytest.raises(ServiceUnavailable, match=rf"MINIWOB_URL={nowhere} does not answer"):
        preflight([task], settings_for(miniwob_url=nowhere))
    env = BrowserGymEnv(task, settings_for(miniwob_url=nowhere))
    with pytest.raises(EnvironmentFailure, match=rf"did not set up from {nowhere}: .*ERR_CONNECTION_REFUSED"):
        env.reset()
    env.close()
    with pytest.raises(ServiceUnavailable, match=r"serves no MiniWoB page .*HTTP 404"):  # a server, not MiniWoB's
        preflight([task], settings_for(miniwob_url=local_url() + "nothing-here/"))
    with pytest.raises(ConfigError, match=r"MINIWOB_URL='http://127.0.0.1:1/miniwob' must .* ending in '/'"):
        BrowserGymEnv(task, settings_for(miniwob_url="http://127.0.0.1:1/miniwob"))
    preflight([task], settings_for())  # this process's own server answers
