"""What HALO's orchestrator asks of a web page: the action cache's state key and its rule for an action that
worked, whether a cached action's target is still on the page, the recovery move and the high-stakes pages.
kind.py gathers these, with the macros (macros.py) and the progress score (progress.py), into the web kind's
AgentFacet (kinds/spec.py); agents/ reaches them only through it.
"""

from __future__ import annotations

import re
from urllib.parse import urlparse, urlsplit

from loraloop.envs.base import StepInfo
from loraloop.envs.web.actions import ActionError, parse_action
from loraloop.envs.web.prompts import page_url
from loraloop.store.records import Step
from loraloop.store.trajectories import obs_hash

_TREE = "# Accessibility tree\n"
_VOLATILE = re.compile(r", focused\b")  # which element has the focus says nothing about the page's state
_BID_ARGS = ("bid", "from_bid", "to_bid")
# Web pages where an action cannot be taken back: paying, sending, deleting (matched on the URL's path).
HIGH_STAKES_PAGE = re.compile(r"/(checkout|compose|send|delete|cancel)\b", re.I)


def page_structure(observation: str) -> str:
    """A web page's elements as the key sees them: the accessibility tree's lines that carry a bid (role, name
    and state such as value or checked), without the focus marker; free text, tabs, errors and events are left
    out, so the same page with another error message or focus is the same state."""
    tree = (observation or "").split(_TREE, 1)[-1]
    return "\n".join(_VOLATILE.sub("", line.strip()) for line in tree.splitlines() if line.lstrip().startswith("["))


def state_key(task_id: str, observation: str) -> str:
    """The cache key of a page: the task, the page's path and query (the observation's URL line; the sites' host
    is left out, so workers reaching them at different addresses share entries) and a digest of the page's
    structure. The task is part of the key: the same page asks for a different action under another goal."""
    where = urlsplit(page_url(observation) or "")
    path = where.path + (f"?{where.query}" if where.query else "")
    return f"web:{task_id}:{path}:{obs_hash(page_structure(observation))}"


def action_worked(_info: StepInfo, before: str, after: str) -> bool:
    """An action that raised no error worked when the page changed: its URL or its structure (a click on nothing
    changes neither)."""
    return page_url(before) != page_url(after) or page_structure(before) != page_structure(after)


def target_exists(action: str, observation: str) -> bool:
    """Every bid the action names is on the current page (the action is parsed with the env's own parser, never
    run); an action that does not parse has no target."""
    try:
        parsed = parse_action(action)
    except ActionError:
        return False
    page = observation or ""
    return all(f"[{parsed.args[arg]}]" in page for arg in _BID_ARGS if arg in parsed.args)


def recovery(trigger: str, steps: list[Step]) -> str:
    """Go back to the page before, or reload the page (after a repeated error, or when still on the first page)."""
    url = steps[-1].url if steps else None
    moved = any(step.url != url for step in steps)
    if url and (trigger == "repeated_error" or not moved):
        return f"Think: recover by reloading the page.\nAction: goto({url!r})"
    return "Think: recover by going back to the page before.\nAction: go_back()"


def high_stakes(observation: str) -> str | None:
    """The page's URL when its actions cannot be taken back (checkout, compose/send, delete, cancel), else None."""
    url = page_url(observation)
    return url if url and HIGH_STAKES_PAGE.search(urlparse(url).path) else None
