"""Progress scores of web episodes: how far an episode got, step by step, from what the agent's pages show (0..1).

HALO ranks a task's episodes by the progress they made (`export --pairing_strategy progress_ranked`),
so a failed episode that reached the checkout ranks above one that never found the product.
EpisodeSession records the score on every step (`progress_score`) and the episode's maximum and final
score on its end record, whoever played it.

- The bundled sites have milestone tables: Shopzon (found products, opened one, added to the cart,
  reached the checkout, placed the order; or opened the orders, the order, cancelled it) and Quickmail
  (searched, opened an email, changed it, composing, wrote, sent). A task wants the milestones its goal
  asks for (read from the goal's words: "Buy…" wants the checkout, "order o1002" the order's page); the
  score is the share of wanted milestones reached so far. Reached milestones stay reached, so the score
  never falls within an episode.
- Other web sites get a generic score: new page types reached (the path with its ids blanked) and form
  fields filled, n / (n + 4): it grows with each and never reaches 1 without success.
- A web episode that ends solved scores 1.0 on its final step (the goal is the last milestone).
- Kinds without a progress facet (the shell, tau2) have no score (None): their state is inside a container or a
  database that the observations show only in pieces, and a command that ran says nothing of how close the answer
  is. Their exports rank by return.

The web kind's AgentFacet (kind.py) makes a `WebProgress` for each episode; EpisodeSession updates it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from loraloop.envs.base import StepInfo
from loraloop.envs.web.halo import page_structure
from loraloop.envs.web.prompts import page_url

GENERIC_HALF = 4  # generic points at which the generic score is 0.5
_CART = re.compile(r"\blink 'Cart \((\d+)\)'")
_ORDER_PAGE = re.compile(r"^/shop/orders/(o\d+)$")
_ORDER_ID = re.compile(r"\b(o\d{4})\b", re.I)
_EDITS = ("fill", "select_option", "check", "uncheck", "clear")


@dataclass
class Visit:
    """One step as the milestones see it: where the agent is now, where it was, what it did, what the page shows."""

    path: str
    query: dict[str, list[str]]
    previous: str
    action: str
    observation: str
    error: bool
    goal: str
    cart: int | None  # the shop's cart count on this page
    first_cart: int | None  # and on the first page
    changed: bool  # the page's elements differ from the page before the step


@dataclass(frozen=True)
class Milestone:
    """A site milestone: when a step reaches it, and which goals want it (None: every goal on the site)."""

    name: str
    reached: Callable[[Visit], bool]
    wanted: Callable[[str], bool] | None = None


def _goal(pattern: str) -> Callable[[str], bool]:
    compiled = re.compile(pattern, re.I)
    return lambda goal: bool(compiled.search(goal))


_PURCHASE = _goal(r"^(buy|order|send|reorder)\b")
_ORDER_REF = _goal(r"\bo\d{4}\b|\bthe order\b")


def _order_page(visit: Visit) -> bool:
    """The page of an existing order (not the one just placed); the goal's order when it names one."""
    match = _ORDER_PAGE.match(visit.path)
    named = _ORDER_ID.search(visit.goal)
    return (
        match is not None and visit.previous != "/shop/checkout" and (not named or named.group(1).lower() == match[1])
    )


SHOP = (
    Milestone(
        "found products",
        lambda v: v.path.startswith(("/shop/search", "/shop/category/")),
        lambda goal: not _ORDER_REF(goal),
    ),
    Milestone(
        "opened a product",
        lambda v: v.path.startswith("/shop/product/"),
        lambda goal: _PURCHASE(goal) or not _ORDER_REF(goal),
    ),
    Milestone(
        "added to the cart",
        lambda v: v.cart is not None and v.cart > (v.first_cart or 0),
        lambda goal: _PURCHASE(goal) or _goal(r"\bcart\b")(goal),
    ),
    Milestone("reached the checkout", lambda v: v.path == "/shop/checkout", _PURCHASE),
    Milestone(
        "placed the order", lambda v: bool(_ORDER_PAGE.match(v.path)) and v.previous == "/shop/checkout", _PURCHASE
    ),
    Milestone("opened the orders", lambda v: v.path == "/shop/orders", _ORDER_REF),
    Milestone("opened the order", _order_page, _ORDER_REF),
    Milestone(
        "cancelled the order",
        lambda v: _order_page(v) and "StaticText 'Cancelled'" in v.observation,
        _goal(r"\bcancel\b"),
    ),
)
_COMPOSE = _goal(r"^(reply|forward|send|email)\b|\bemail it\b")
MAIL = (
    Milestone("searched", lambda v: v.path == "/mail/search", _goal(r"\bsearch\b")),
    Milestone(
        "opened an email",
        lambda v: v.path.startswith("/mail/email/"),
        lambda goal: not _goal(r"^send an email\b")(goal),
    ),
    Milestone(
        "changed an email",
        lambda v: (
            v.query.get("notice", [""])[0] in ("archived", "deleted", "restored", "unread")
            or (
                v.path == v.previous
                and v.path.startswith("/mail/email/")
                and v.action.startswith("click(")
                and v.changed
            )
        ),  # starred, labelled: the same email's page, changed
        _goal(r"\b(star|unstar|archive|trash|delete|restore|move|label|as unread)\b"),
    ),
    Milestone("composing", lambda v: v.path == "/mail/compose", _COMPOSE),
    Milestone(
        "wrote the message",
        lambda v: v.previous == "/mail/compose" and v.action.startswith("fill(") and not v.error,
        _COMPOSE,
    ),
    Milestone("sent", lambda v: v.query.get("notice", [""])[0] == "sent", _COMPOSE),
)
SITES = {"shopzon": SHOP, "quickmail": MAIL}


def page_type(path: str, query: dict[str, list[str]]) -> str:
    """A page's type for the generic score: its path with id-like segments blanked, and its query's keys."""
    parts = ["#" if re.search(r"\d", part) else part for part in path.split("/")]
    return "/".join(parts) + ("?" + "&".join(sorted(query)) if query else "")


@dataclass
class WebProgress:
    """The progress of one web episode, updated after every step; the task's site and goal pick the milestones."""

    task: Any
    reached: set[str] = field(default_factory=set)
    pages: set[str] = field(default_factory=set)
    edited: set[str] = field(default_factory=set)
    path: str = ""
    structure: str = ""
    first_cart: int | None = None
    score: float | None = 0.0

    def __post_init__(self) -> None:
        self.goal = str(getattr(self.task, "goal", "") or getattr(self.task, "description", ""))
        site = SITES.get(getattr(self.task, "site_id", ""))
        self.milestones = [m for m in site if m.wanted is None or m.wanted(self.goal)] if site else None

    def start(self, observation: str) -> None:
        """Take in the first page (before any step): the shop's cart count and the first page type."""
        where = urlsplit(page_url(observation) or "")
        self.path, self.structure = where.path, page_structure(observation)
        self.first_cart = _cart(observation)
        self.pages.add(page_type(where.path, parse_qs(where.query)))

    def update(self, observation: str | None, url: str | None, action: str | None, info: StepInfo) -> float | None:
        """The score after one step: `observation` and `url` are the page after it (the URL is read from the
        observation when None), `action` the canonical action, `info` the env's (error, success)."""
        if observation is None:  # the final step: its answer was graded
            self.score = 1.0 if info.success else self.score
            return self.score
        where = urlsplit(url or page_url(observation) or "")
        query = parse_qs(where.query)
        structure = page_structure(observation)
        visit = Visit(
            where.path,
            query,
            self.path,
            action or "",
            observation,
            bool(info.error),
            self.goal,
            _cart(observation),
            self.first_cart,
            structure != self.structure,
        )
        self.path, self.structure = where.path, structure
        if self.milestones is not None:
            self.reached.update(m.name for m in self.milestones if m.name not in self.reached and m.reached(visit))
            self.score = max(
                self.score or 0.0, round(len(self.reached) / len(self.milestones), 3) if self.milestones else 0.0
            )
            return self.score
        self.pages.add(page_type(where.path, query))
        if visit.action.startswith(_EDITS) and not visit.error:
            self.edited.add(visit.action.split(",")[0])  # the field acted on: `fill('12'`
        points = len(self.pages) - 1 + len(self.edited)
        self.score = round(points / (points + GENERIC_HALF), 3)
        return self.score


def _cart(observation: str) -> int | None:
    found = _CART.search(observation or "")
    return int(found.group(1)) if found else None
