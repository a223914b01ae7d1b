"""The web kind's macros: multi-step skills an agent calls in one reply (`Action: search_and_open(query='gel
pens')`), expanded by agents/macros.py into BrowserGym actions one step at a time. They act on the elements of the
current accessibility tree, found by role and name, so they work on any site that labels its controls:
`search_and_open(query)`, `fill_form(fields, submit=None)`, `add_to_cart_and_checkout(quantity=None,
shipping=None)`. A macro that cannot go on (no search box on the page, the last step failed) raises MacroError
naming the element; the orchestrator shows it to the agent as an error observation.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any

from loraloop.calls import MacroSteps, text_argument
from loraloop.envs.web.prompts import ERROR_HEADING, page_url
from loraloop.errors import MacroError

_LINE = re.compile(
    r"^(?P<depth>\t*)\[(?P<bid>[^\]]+)\] (?P<role>\S+) "
    r"(?P<name>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")(?P<props>.*)$"
)
_PAGE_ERROR = re.compile(rf"^{re.escape(ERROR_HEADING)}\n(.+?)(?:\n\n# |\Z)", re.M | re.S)
_CHECKED = re.compile(r"\bchecked(?:='true'|='mixed'|,|$)")
# Landmarks whose links are the site's chrome, not a result (header, menus, side bars, footer, forms).
_CHROME = {"banner", "navigation", "complementary", "contentinfo", "search", "form"}
_FIELD_ROLES = {"textbox", "searchbox", "combobox", "listbox", "spinbutton", "checkbox", "radio", "switch"}
_TOGGLES = {"checkbox", "radio", "switch"}
_CHOICES = {"combobox", "listbox"}


@dataclass(frozen=True)
class Element:
    """One line of the accessibility tree that has a bid, with the roles of the lines it sits under."""

    bid: str
    role: str
    name: str
    ancestors: tuple[str, ...] = ()
    checked: bool = False


def elements(observation: str) -> list[Element]:
    """The page's elements with bids, in page order (BrowserGym's tab-indented `[bid] role 'name'` lines)."""
    found: list[Element] = []
    stack: list[tuple[int, str]] = []  # (depth, role) of the open ancestors
    for line in (observation or "").splitlines():
        match = _LINE.match(line)
        if not match:
            continue
        depth = len(match["depth"])
        while stack and stack[-1][0] >= depth:
            stack.pop()
        found.append(
            Element(
                match["bid"],
                match["role"],
                " ".join(ast.literal_eval(match["name"]).split()),
                tuple(role for _, role in stack),
                bool(_CHECKED.search(match["props"])),
            )
        )
        stack.append((depth, match["role"]))
    return found


def _norm(text: str) -> str:
    return " ".join(str(text).split()).casefold()


def _find(page: str, roles: set[str], name: Callable[[str], bool]) -> Element | None:
    """The first element of one of `roles` whose (normalised) name satisfies `name`."""
    return next((e for e in elements(page) if e.role in roles and name(_norm(e.name))), None)


def _named(page: str, roles: set[str], label: str) -> Element | None:
    """The element of `roles` named `label`: an exact (case-insensitive) name first, else the one name holding it."""
    wanted = _norm(label)
    exact = _find(page, roles, lambda name: name == wanted)
    if exact is not None:
        return exact
    partial = [e for e in elements(page) if e.role in roles and wanted in _norm(e.name)]
    return partial[0] if len(partial) == 1 else None


def _check_page(macro: str, page: str) -> None:
    """Stop the macro when the env reported that its last primitive action failed."""
    error = _PAGE_ERROR.search(page or "")
    if error:
        raise MacroError(f"{macro}: the last step failed: {error.group(1).strip()}")


def _where(page: str) -> str:
    url = page_url(page)
    return f" (page {url})" if url else ""


def _web(think: str, action: str) -> str:
    """A primitive web action as the agent's reply format writes it."""
    return f"Think: {think}\nAction: {action}"


def _click(macro: str, page: str, element: Element | None, missing: str, think: str) -> Generator[str, str, str]:
    """Click `element` and return the page after it; MacroError saying what is `missing` when it is None."""
    if element is None:
        raise MacroError(f"{macro}: {missing}{_where(page)}")
    page = yield _web(think, f"click({element.bid!r})")
    _check_page(macro, page)
    return page


def search_and_open(page: str, query: str) -> MacroSteps:
    """Type the query into the page's search box, submit it, open the first result."""
    box = _find(page, {"searchbox"}, lambda name: True) or _find(
        page, {"textbox", "combobox"}, lambda name: "search" in name
    )
    if box is None:
        raise MacroError(f"search_and_open: no search box on the page{_where(page)}")
    page = yield _web(f"I search for {query!r}.", f"fill({box.bid!r}, {query!r})")
    _check_page("search_and_open", page)
    button = _find(page, {"button"}, lambda name: name == "search" or name.startswith("search"))
    page = yield (
        _web("I submit the search.", f"click({button.bid!r})")
        if button is not None
        else _web("I submit the search.", f"press({box.bid!r}, 'Enter')")
    )
    _check_page("search_and_open", page)
    inside_main = any("main" in e.ancestors for e in elements(page))
    result = next(
        (
            e
            for e in elements(page)
            if e.role == "link" and not _CHROME.intersection(e.ancestors) and (not inside_main or "main" in e.ancestors)
        ),
        None,
    )
    yield from _click(
        "search_and_open",
        page,
        result,
        f"the search for {query!r} has no result to open",
        f"I open the first result, {result.name if result else ''!r}.",
    )


def _switched_on(value: Any) -> bool:
    return value if isinstance(value, bool) else _norm(value) in ("true", "yes", "on", "checked", "1")


def _already(element: Element, value: Any) -> bool:
    """A checkbox or radio already in the wanted state: checking it again would change nothing."""
    return element.role in _TOGGLES and element.checked == _switched_on(value)


def _field_action(element: Element, label: str, value: Any) -> str:
    if element.role in _TOGGLES:
        on = _switched_on(value)
        return _web(f"I {'check' if on else 'uncheck'} {label!r}.", f"{'check' if on else 'uncheck'}({element.bid!r})")
    if element.role in _CHOICES:
        return _web(f"I choose {value!r} for {label!r}.", f"select_option({element.bid!r}, {str(value)!r})")
    return _web(f"I fill {label!r}.", f"fill({element.bid!r}, {str(value)!r})")


def fill_form(page: str, fields: dict, submit: str | None = None) -> MacroSteps:
    """Fill each field found by its label (text, choice, checkbox or radio), in order; then click `submit`. A checkbox
    or radio already as wanted is left alone (a step that changes nothing would not count as worked)."""
    for label, value in fields.items():
        element = _named(page, _FIELD_ROLES, label)
        if element is None:
            known = ", ".join(repr(e.name) for e in elements(page) if e.role in _FIELD_ROLES and e.name)
            raise MacroError(f"fill_form: no field {label!r} on the page{_where(page)} (fields: {known or 'none'})")
        if _already(element, value):
            continue
        page = yield _field_action(element, label, value)
        _check_page("fill_form", page)
    if submit is not None:
        yield from _click(
            "fill_form",
            page,
            _named(page, {"button", "link"}, submit),
            f"no button {submit!r} to submit the form",
            f"I submit the form with {submit!r}.",
        )


_ADD = re.compile(r"^add to (cart|basket|bag)")
_CHECKOUT = re.compile(r"checkout|check out")
_PLACE = re.compile(r"^(place (your )?order|buy now|complete (purchase|order)|pay now)")


def add_to_cart_and_checkout(page: str, quantity: int | None = None, shipping: str | None = None) -> MacroSteps:
    """On a product page: set the quantity, add to cart, proceed to checkout, pick the shipping, place the order."""
    if quantity is not None:
        box = _find(page, _CHOICES | {"spinbutton", "textbox"}, lambda name: "quantity" in name)
        if box is None:
            raise MacroError(f"add_to_cart_and_checkout: no quantity field on the page{_where(page)}")
        verb = "fill" if box.role in ("spinbutton", "textbox") else "select_option"
        page = yield _web(f"I set the quantity to {quantity}.", f"{verb}({box.bid!r}, {str(quantity)!r})")
        _check_page("add_to_cart_and_checkout", page)
    page = yield from _click(
        "add_to_cart_and_checkout",
        page,
        _find(page, {"button"}, lambda name: bool(_ADD.search(name))),
        "no 'Add to cart' button (open a product first)",
        "I add the product to the cart.",
    )
    page = yield from _click(
        "add_to_cart_and_checkout",
        page,
        _find(page, {"link", "button"}, lambda name: bool(_CHECKOUT.search(name))),
        "no checkout link or button",
        "I proceed to checkout.",
    )
    if shipping is not None:
        speed = _named(page, {"radio"}, shipping) or _named(page, _CHOICES, "shipping")
        if speed is None:
            raise MacroError(f"add_to_cart_and_checkout: no shipping option {shipping!r}{_where(page)}")
        if not _already(speed, True):
            page = yield _field_action(speed, shipping, True if speed.role == "radio" else shipping)
            _check_page("add_to_cart_and_checkout", page)
    yield from _click(
        "add_to_cart_and_checkout",
        page,
        _find(page, {"button"}, lambda name: bool(_PLACE.search(name))),
        "no 'Place order' button",
        "I place the order.",
    )


def check_fill_form(args: dict) -> None:
    fields = args["fields"]
    if not isinstance(fields, dict) or not fields:
        raise MacroError(f"fill_form: argument 'fields' must be a non-empty dict of label: value, got {fields!r}")
    for label, value in fields.items():
        text_argument(f"fill_form: a label in 'fields' ({label!r})", label)
        if not isinstance(value, (str, int, float, bool)):
            raise MacroError(f"fill_form: the value of field {label!r} must be a string, number or bool, got {value!r}")
    text_argument("fill_form: argument 'submit'", args["submit"], optional=True)


def check_checkout(args: dict) -> None:
    quantity = args["quantity"]
    if quantity is not None and (isinstance(quantity, bool) or not isinstance(quantity, int) or quantity < 1):
        raise MacroError(f"add_to_cart_and_checkout: argument 'quantity' must be a whole number >= 1, got {quantity!r}")
    text_argument("add_to_cart_and_checkout: argument 'shipping'", args["shipping"], optional=True)
