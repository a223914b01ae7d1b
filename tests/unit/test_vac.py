"""The Verified Action Cache's rules on real pages of the bundled sites: keys, what worked, reuse and eviction."""

import json
from pathlib import Path

import pytest

from loraloop.agents.vac import (
    CacheLookup,
    MemoryActionCache,
    action_worked,
    open_action_cache,
    state_key,
)
from loraloop.envs.shell.protocol import format_output
from loraloop.envs.web.prompts import page_url
from loraloop.errors import ConfigError
from loraloop.kinds.registry import env_kind
from tests.helpers import step_info

PAGES = Path(__file__).parents[1] / "fixtures" / "web_pages"


def pages(task: str) -> list[str]:
    """The pages a teacher episode of `task` saw, first to last (recorded from the real sites)."""
    episode = json.loads((PAGES / f"{task}.json").read_text())
    return [episode["first_observation"]] + [s["observation"] for s in episode["steps"] if s["observation"]]


def steps(task: str) -> list[dict]:
    return json.loads((PAGES / f"{task}.json").read_text())["steps"]


WEB, SHELL = env_kind("web"), env_kind("shell")
SHOP = pages("shop-2")  # home, search box filled, results, product, quantity set, cart, checkout…
HOME, FILLED, RESULTS, PRODUCT = SHOP[0], SHOP[1], SHOP[2], SHOP[3]


def test_web_keys_follow_the_page_not_its_focus_errors_or_host():
    key = state_key(WEB, "shop-2", HOME)
    assert key.startswith("web:shop-2:/shop:")
    assert state_key(WEB, "shop-2", FILLED) != key  # the search box now holds a value
    moved = HOME.replace("http://localhost:8090", "http://sites:8090")
    errored = HOME.replace("# Accessibility tree", "# Error from the last action\nno element\n\n# Accessibility tree")
    focused = HOME.replace("[11] searchbox 'Search'", "[11] searchbox 'Search', focused")
    assert (
        state_key(WEB, "shop-2", moved) == state_key(WEB, "shop-2", errored) == state_key(WEB, "shop-2", focused) == key
    )
    assert state_key(WEB, "shop-1", HOME) != key  # another goal on the same page is another state
    assert state_key(WEB, "shop-2", HOME.replace(page_url(HOME), "http://localhost:8090/shop/cart")) != key


def test_shell_keys_are_the_task_and_its_last_output():
    one = format_output("a.txt\nb.txt")
    assert state_key(SHELL, "t1", one) == state_key(SHELL, "t1", one) != state_key(SHELL, "t2", one)
    assert state_key(SHELL, "t1", one) != state_key(SHELL, "t1", format_output("a.txt"))


def test_an_action_worked_when_the_env_says_so_and_the_page_changed():
    fill, search = steps("shop-2")[0], steps("shop-2")[1]
    assert action_worked(WEB, step_info(fill["info"]), HOME, FILLED)  # the search box's value changed
    assert action_worked(WEB, step_info(search["info"]), FILLED, RESULTS)  # a new URL
    assert not action_worked(WEB, step_info(search["info"]), RESULTS, RESULTS)  # a click that changed nothing
    assert not action_worked(WEB, step_info({**search["info"], "error": "no element with bid '99'"}), FILLED, RESULTS)
    final = steps("shop-2")[-1]
    assert final["observation"] is None and action_worked(WEB, step_info(final["info"]), SHOP[-1], None)
    assert not action_worked(WEB, step_info({**final["info"], "success": False}), SHOP[-1], None)
    before = format_output("x")
    assert action_worked(SHELL, step_info({"exit_code": 0}), before, format_output("y"))
    assert not action_worked(SHELL, step_info({"exit_code": 1}), before, format_output("y"))
    assert not action_worked(SHELL, step_info({"exit_code": 0, "error": "timeout"}), before, format_output("y"))


def test_a_web_target_exists_while_every_bid_it_names_is_on_the_page():
    assert WEB.agent.target_exists("Action: click('39')", PRODUCT)  # 'Add to cart'
    assert not WEB.agent.target_exists("Action: click('39')", HOME)  # the home page has no [39]
    assert not WEB.agent.target_exists("nothing to parse", HOME)
    assert WEB.agent.target_exists("go_back()", HOME)  # names no element
    assert SHELL.agent.target_exists("Act: bash\n```bash\nls\n```", "anything")


def test_lookup_hit_miss_stale_and_repeat():
    cache = MemoryActionCache()
    key = state_key(WEB, "shop-2", PRODUCT)
    add = "Think: add it.\nAction: click('39')"
    assert cache.lookup(key, kind=WEB, observation=PRODUCT, recent_actions=[]) == CacheLookup(None, "miss")
    cache.verified(key, add)
    assert cache.lookup(key, kind=WEB, observation=PRODUCT, recent_actions=["Action: click('12')"]) == CacheLookup(
        add, "hit"
    )
    # the same action as the last one taken, however it was written: skipped
    assert cache.lookup(key, kind=WEB, observation=PRODUCT, recent_actions=['click("39")']) == CacheLookup(
        None, "repeat"
    )
    # the page lost the element the entry clicks (here: the page the caller holds is another one): skipped, and
    # the entry is kept for when it comes back
    assert cache.lookup(key, kind=WEB, observation=HOME, recent_actions=[]) == CacheLookup(None, "stale")
    assert cache.lookup(key, kind=WEB, observation=PRODUCT, recent_actions=[]).event == "hit"


def test_evicted_at_the_second_failure_and_verified_resets_the_count():
    cache = MemoryActionCache()
    key, action, other = "shell:t1:abc", "Act: bash\n```bash\nls\n```", "Act: answer(3)"
    cache.verified(key, action)
    cache.failed(key, action)
    assert cache.lookup(key, kind=SHELL, observation="", recent_actions=[]).action == action  # one failure: kept
    cache.verified(key, action)  # it worked again: the count starts over
    cache.failed(key, action)
    assert cache.lookup(key, kind=SHELL, observation="", recent_actions=[]).event == "hit"
    cache.failed(key, other)  # a failure of another action does not count against this entry
    assert cache.lookup(key, kind=SHELL, observation="", recent_actions=[]).event == "hit"
    cache.verified(key, other)  # the first verified action stays
    assert cache.lookup(key, kind=SHELL, observation="", recent_actions=[]).action == action
    cache.failed(key, action)  # second failure since the last success: evicted
    assert cache.lookup(key, kind=SHELL, observation="", recent_actions=[]).event == "miss"
    cache.verified(key, other)  # the state is free for another action now
    assert cache.lookup(key, kind=SHELL, observation="", recent_actions=[]).action == other


def test_open_action_cache_is_memory_without_a_broker_and_rejects_other_urls():
    assert isinstance(open_action_cache(None, "ns"), MemoryActionCache)
    assert isinstance(open_action_cache("", "ns"), MemoryActionCache)
    with pytest.raises(ConfigError, match="needs a Redis URL.*'amqp://x'"):
        open_action_cache("amqp://x", "ns")
