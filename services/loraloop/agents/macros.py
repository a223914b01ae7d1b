"""Macros: multi-step skills an agent calls in one reply, expanded into the environment's own primitive actions.

With macros on, the agent may write a macro call where it would write an action (`Action:
search_and_open(query='gel pens')`, `Act: find_and_count(directory='/etc', pattern='*.conf')`).
`parse_macro` reads the call with `ast` (never runs it); the orchestrator then asks the macro for one
primitive action per step (`Macro.next_action(observation)`), each taken and recorded like any other
action (Step.macro holds the call), until the macro says it is done (None).

Web macros act on the elements of the current accessibility tree (found by role and name, so they work
on any site that labels its controls): `search_and_open(query)`, `fill_form(fields, submit=None)`,
`add_to_cart_and_checkout(quantity=None, shipping=None)`. Shell macros write AgentBench's text protocol:
`inspect_then_answer(path)` and `find_and_count(directory, pattern)`.

A call with a missing or bad argument, or a macro that cannot go on (no search box on the page, the last
step failed), raises MacroError naming the argument or the element; the orchestrator shows it to the
agent as an error observation.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

from loraloop.envs.shell.protocol import EMPTY_OUTPUT
from loraloop.envs.web.actions import REQUIRED, bind_arguments, leading_call
from loraloop.envs.web.prompts import ERROR_HEADING, page_url
from loraloop.errors import LoraloopError

Steps = Generator[str, str, None]  # yields primitive actions, is sent the observation after each


class MacroError(LoraloopError):
    """A macro call with a missing or bad argument, or a macro that cannot go on; the message names what."""


# ---- reading a web page ---------------------------------------------------------------------------------------
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


# ---- web macros ------------------------------------------------------------------------------------------------
def search_and_open(page: str, query: str) -> Steps:
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


def fill_form(page: str, fields: dict, submit: str | None = None) -> Steps:
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


def add_to_cart_and_checkout(page: str, quantity: int | None = None, shipping: str | None = None) -> Steps:
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
        _find(page, {"button"}, _ADD.search),
        "no 'Add to cart' button (open a product first)",
        "I add the product to the cart.",
    )
    page = yield from _click(
        "add_to_cart_and_checkout",
        page,
        _find(page, {"link", "button"}, _CHECKOUT.search),
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
        _find(page, {"button"}, _PLACE.search),
        "no 'Place order' button",
        "I place the order.",
    )


# ---- shell macros ----------------------------------------------------------------------------------------------
def _bash(think: str, command: str) -> str:
    return f"Think: {think}\n\nAct: bash\n\n```bash\n{command}\n```"


def _output(observation: str) -> str:
    """The command's output in a shell observation (AgentBench's `The output of the OS:` text)."""
    if observation.strip() == EMPTY_OUTPUT:
        return ""
    head, _, rest = observation.partition("\n\n")
    return rest.strip() if head.startswith("The output of the OS") else observation.strip()


def _missing(macro: str, what: str, output: str) -> None:
    if "No such file or directory" in output:
        raise MacroError(f"{macro}: {what} does not exist ({output.splitlines()[0][:200]})")


def inspect_then_answer(observation: str, path: str) -> Steps:
    """Show a file (`cat`) or a folder (`ls -A`), then answer with what it holds, on one line."""
    quoted = shlex.quote(path)
    observation = yield _bash(f"I look at {path}.", f"if [ -d {quoted} ]; then ls -A {quoted}; else cat {quoted}; fi")
    output = _output(observation)
    _missing("inspect_then_answer", f"path {path!r}", output)
    answer = " ".join(line.strip() for line in output.splitlines() if line.strip())
    yield f"Think: {path} holds the answer.\n\nAct: answer({answer})"


def find_and_count(observation: str, directory: str, pattern: str) -> Steps:
    """Count the files under `directory` whose name matches `pattern` (find -type f -name | wc -l), answer it."""
    command = f"find {shlex.quote(directory)} -type f -name {shlex.quote(pattern)} | wc -l"
    observation = yield _bash(f"I count the files named {pattern} under {directory}.", command)
    output = _output(observation)
    _missing("find_and_count", f"directory {directory!r}", output)
    last = output.splitlines()[-1].strip() if output else ""
    if not last.isdigit():
        raise MacroError(f"find_and_count: find printed no count ({output[:200]!r})")
    yield f"Think: There are {last} such files.\n\nAct: answer({last})"


# ---- the catalogue --------------------------------------------------------------------------------------------
def _text(name: str, value: Any, optional: bool = False) -> None:
    if optional and value is None:
        return
    if not isinstance(value, str) or not value.strip():
        raise MacroError(f"{name} must be a non-empty string, got {value!r}")


def _check_fill_form(args: dict) -> None:
    fields = args["fields"]
    if not isinstance(fields, dict) or not fields:
        raise MacroError(f"fill_form: argument 'fields' must be a non-empty dict of label: value, got {fields!r}")
    for label, value in fields.items():
        _text(f"fill_form: a label in 'fields' ({label!r})", label)
        if not isinstance(value, (str, int, float, bool)):
            raise MacroError(f"fill_form: the value of field {label!r} must be a string, number or bool, got {value!r}")
    _text("fill_form: argument 'submit'", args["submit"], optional=True)


def _check_checkout(args: dict) -> None:
    quantity = args["quantity"]
    if quantity is not None and (isinstance(quantity, bool) or not isinstance(quantity, int) or quantity < 1):
        raise MacroError(f"add_to_cart_and_checkout: argument 'quantity' must be a whole number >= 1, got {quantity!r}")
    _text("add_to_cart_and_checkout: argument 'shipping'", args["shipping"], optional=True)


def _check_texts(name: str, *params: str) -> Callable[[dict], None]:
    def check(args: dict) -> None:
        for param in params:
            _text(f"{name}: argument {param!r}", args[param])

    return check


@dataclass(frozen=True)
class MacroSpec:
    """One macro: its parameters (name, default; REQUIRED for none), argument check, steps and help line."""

    params: tuple[tuple[str, Any], ...]
    check: Callable[[dict], None]
    steps: Callable[..., Steps]
    usage: str


MACROS: dict[str, dict[str, MacroSpec]] = {
    "web": {
        "search_and_open": MacroSpec(
            (("query", REQUIRED),),
            _check_texts("search_and_open", "query"),
            search_and_open,
            "search_and_open(query)  search the site, open the first result",
        ),
        "fill_form": MacroSpec(
            (("fields", REQUIRED), ("submit", None)),
            _check_fill_form,
            fill_form,
            "fill_form(fields, submit=None)  fill fields by label, e.g. "
            "fill_form({'To': 'ann@example.com', 'Subject': 'Hi'}, submit='Send')",
        ),
        "add_to_cart_and_checkout": MacroSpec(
            (("quantity", None), ("shipping", None)),
            _check_checkout,
            add_to_cart_and_checkout,
            "add_to_cart_and_checkout(quantity=None, shipping=None)  on a product page: add it to the cart, "
            "check out and place the order",
        ),
    },
    "shell": {
        "inspect_then_answer": MacroSpec(
            (("path", REQUIRED),),
            _check_texts("inspect_then_answer", "path"),
            inspect_then_answer,
            "inspect_then_answer(path)  show a file or folder, answer with what it holds",
        ),
        "find_and_count": MacroSpec(
            (("directory", REQUIRED), ("pattern", REQUIRED)),
            _check_texts("find_and_count", "directory", "pattern"),
            find_and_count,
            "find_and_count(directory, pattern)  count the files named like pattern (e.g. '*.log'), answer the count",
        ),
    },
}


@dataclass
class Macro:
    """A parsed macro call, expanding into primitive actions one step at a time."""

    name: str
    call: str  # the call as the agent wrote it (recorded in Step.macro)
    kind: str
    args: dict[str, Any]
    done: bool = False
    _steps: Steps | None = field(default=None, repr=False)

    def next_action(self, observation: str) -> str | None:
        """The next primitive action for the current observation, in the env's own syntax; None when the macro is
        done. MacroError when it cannot go on (its target is not on the page, its last step failed)."""
        if self.done:
            return None
        try:
            if self._steps is None:
                self._steps = MACROS[self.kind][self.name].steps(observation, **self.args)
                return next(self._steps)
            return self._steps.send(observation)
        except StopIteration:
            self.done = True
            return None
        except MacroError:
            self.done = True
            raise


def _calls(text: str, names: Iterator[str]) -> Iterator[tuple[str, str]]:
    """(name, the text from the name on) for each place a macro's name is called in `text`."""
    pattern = re.compile(r"\b(" + "|".join(sorted(names, key=len, reverse=True)) + r")\s*\(")
    for match in pattern.finditer(text or ""):
        yield match.group(1), text[match.start() :]


def parse_macro(text: str, kind: str) -> Macro | None:
    """The macro an agent's reply calls, or None when it calls none of `kind`'s macros.

    The call is read with `ast` (literals only, never run). A call that cannot be read, or with a missing, unknown
    or bad argument, raises MacroError naming the macro and the argument.
    """
    catalogue = MACROS.get(kind)
    if not catalogue:
        return None
    for name, snippet in _calls(text, iter(catalogue)):
        found = leading_call(snippet)
        if found is None or found[0].func.id != name:
            raise MacroError(
                f"{name}: cannot read the call {snippet.splitlines()[0][:120]!r} "
                f"(write it as {catalogue[name].usage.split('  ')[0]} with literal arguments)"
            )
        call, source = found
        spec = catalogue[name]
        args = bind_arguments(name, call, spec.params, MacroError)
        spec.check(args)
        return Macro(name, source, kind, args)
    return None


def macro_help(kind: str) -> str:
    """The lines the orchestrator appends to the system prompt when macros are on ('' for a kind without any)."""
    catalogue = MACROS.get(kind)
    if not catalogue:
        return ""
    where = "on the Act line instead of bash" if kind == "shell" else "instead of an action"
    lines = "\n".join(spec.usage for spec in catalogue.values())
    return f"\n\nMacros (several steps in one reply; write one {where}, with literal arguments):\n{lines}"
