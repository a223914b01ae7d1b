"""What the scripted MiniWoB++ solver reads and writes: the observation's AX tree as nodes, the goal, and the
actions it builds (click, fill, submit). Shared by the strategy modules (teacher.py, teacher_navigation.py)."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass

_NODE = re.compile(
    r"^(?P<depth>\t*)(?:\[(?P<bid>[^\]]+)\] )?(?P<role>\S+) "
    r"(?P<name>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")(?P<props>.*)$"
)


@dataclass(frozen=True)
class Node:
    """One line of the observation's AX tree."""

    bid: str | None
    role: str
    name: str
    depth: int
    props: str

    def prop(self, key: str) -> str | None:
        """A property's value (`value='abc'` gives 'abc'; a bare flag such as `checked` gives 'true')."""
        found = re.search(rf"(?:^|, ){key}(?:=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^,]+))?(?:,|$)", self.props)
        if not found:
            return None
        raw = found.group(1)
        return "true" if raw is None else ast.literal_eval(raw) if raw[0] in "'\"" else raw


def nodes(observation: str) -> list[Node]:
    """The AX tree's lines in an observation (envs/web/prompts.format_observation's layout)."""
    tree = observation.split("# Accessibility tree\n", 1)[-1]
    out = []
    for line in tree.splitlines():
        m = _NODE.match(line)
        if m:
            out.append(Node(m["bid"], m["role"], ast.literal_eval(m["name"]), len(m["depth"]), m["props"]))
    return out


def goal_of(observation: str) -> str:
    """The `# Goal` section of a first observation ('' when there is none)."""
    found = re.search(r"^# Goal\n(.*?)(?:\n\n# |\Z)", observation, re.S | re.M)
    return found.group(1).strip() if found else ""


def quoted(goal: str) -> list[str]:
    """The goal's quoted strings, in order."""
    return re.findall(r'"([^"]*)"', goal)


def find(page: list[Node], name: str | None = None, roles: tuple[str, ...] = (), nth: int = 0) -> Node | None:
    """The nth node with a bid, one of `roles` (any when empty) and exactly `name` (any when None)."""
    hits = [n for n in page if n.bid and (not roles or n.role in roles) and (name is None or n.name == name)]
    return hits[nth] if len(hits) > nth else None


BUTTONS = ("button",)
TEXTBOXES = ("textbox", "searchbox", "spinbutton")
CLICKABLE = ("link", "StaticText", "button", "tab", "treeitem", "listitem", "menuitem", "option", "cell")


def click(node: Node | None) -> str | None:
    """`click('bid')`, or None when there is no node."""
    return f"click({node.bid!r})" if node else None


def fill_then(box: Node | None, value: str, then: Callable[[], str | None], history: list[str]) -> str | None:
    """Fill the box with `value` unless it holds it already (or was filled with it: a password box shows no
    value), then do `then`."""
    if box is None:
        return None
    action = f"fill({box.bid!r}, {value!r})"
    if (box.prop("value") or "") != value and action not in history:
        return action
    return then()


def submit(page: list[Node], label: str = "Submit") -> str | None:
    """Click the button labelled `label` (case-insensitive)."""
    return click(next((n for n in page if n.bid and n.role == "button" and n.name.lower() == label.lower()), None))


def boxes(page: list[Node]) -> list[Node]:
    """The page's text boxes, in order."""
    return [n for n in page if n.role in TEXTBOXES and n.bid]


def fill_all(values: list[str], page: list[Node], then: Callable[[], str | None], history: list[str]) -> str | None:
    """Fill the page's boxes with `values` in order, then do `then`."""
    found = boxes(page)
    if len(found) < len(values):
        return None
    for box, value in zip(found, values):
        action = f"fill({box.bid!r}, {value!r})"
        if (box.prop("value") or "") != value and action not in history:
            return action
    return then()


def table_values(page: list[Node]) -> dict[str, str]:
    """A two-column table's rows (read-table, read-table-2): key cell -> value cell."""
    cells = [n.name for n in page if n.role in ("cell", "gridcell")]
    return dict(zip(cells[::2], cells[1::2]))


# A strategy: (goal, page, turn, history) -> the next action, or None when it sees no way on
Strategy = Callable[[str, list[Node], int, list[str]], str | None]
