"""BrowserGym's action strings, parsed safely: Python call syntax read by `ast`, never executed.

`parse_action(text)` finds the action in a model's output (a fenced block, an `Action:` line or a
bare call) and returns an Action (name + bound arguments) or raises ActionError naming what is wrong.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from loraloop.calls import REQUIRED, bind_arguments, leading_call

# name -> ordered (parameter, default); REQUIRED marks a parameter without a default.
SIGNATURES: dict[str, tuple[tuple[str, Any], ...]] = {
    "click": (("bid", REQUIRED), ("button", "left"), ("modifiers", [])),
    "dblclick": (("bid", REQUIRED), ("button", "left"), ("modifiers", [])),
    "hover": (("bid", REQUIRED),),
    "fill": (("bid", REQUIRED), ("value", REQUIRED)),
    "clear": (("bid", REQUIRED),),
    "select_option": (("bid", REQUIRED), ("options", REQUIRED)),
    "check": (("bid", REQUIRED),),
    "uncheck": (("bid", REQUIRED),),
    "press": (("bid", REQUIRED), ("key_comb", REQUIRED)),
    "focus": (("bid", REQUIRED),),
    "drag_and_drop": (("from_bid", REQUIRED), ("to_bid", REQUIRED)),
    "upload_file": (("bid", REQUIRED), ("file", REQUIRED)),
    "scroll": (("delta_x", REQUIRED), ("delta_y", REQUIRED)),
    "goto": (("url", REQUIRED),),
    "go_back": (),
    "go_forward": (),
    "new_tab": (),
    "tab_close": (),
    "tab_focus": (("index", REQUIRED),),
    "send_msg_to_user": (("text", REQUIRED),),
    "report_infeasible": (("reason", REQUIRED),),
    "noop": (("wait_ms", 1000),),
    "mouse_click": (("x", REQUIRED), ("y", REQUIRED), ("button", "left")),
    "mouse_move": (("x", REQUIRED), ("y", REQUIRED)),
    "keyboard_type": (("text", REQUIRED),),
    "keyboard_press": (("key", REQUIRED),),
}
FINAL_ACTIONS = ("send_msg_to_user", "report_infeasible")
_CALL_START = re.compile(r"\b(" + "|".join(sorted(SIGNATURES, key=len, reverse=True)) + r")\s*\(")
_FENCE = re.compile(r"```(?:python|py)?\s*\n?(.*?)```", re.S)


class ActionError(ValueError):
    """The model's output holds no valid action; the message says what to fix."""


@dataclass(frozen=True)
class Action:
    """One parsed action: its name and its arguments by parameter name."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)

    def text(self) -> str:
        """The canonical action string (`click('12')`), as BrowserGym writes it."""
        required = [p for p, default in SIGNATURES[self.name] if default is REQUIRED]
        parts = [repr(self.args[p]) for p in required]
        parts += [
            f"{p}={self.args[p]!r}"
            for p, default in SIGNATURES[self.name]
            if default is not REQUIRED and self.args.get(p, default) != default
        ]
        return f"{self.name}({', '.join(parts)})"


def _bind(name: str, call: ast.Call) -> dict[str, Any]:
    args = bind_arguments(name, call, SIGNATURES[name], ActionError)
    for param in ("bid", "from_bid", "to_bid"):
        if param in args:
            args[param] = str(args[param])
    return args


def _candidates(text: str) -> list[str]:
    """Places an action may be written, most explicit first: fenced blocks, `Action:` lines, bare calls."""
    found = [block.strip() for block in _FENCE.findall(text)]
    for match in re.finditer(r"(?im)^\s*(?:action|act)\s*:\s*(.+)$", text):
        found.append(match.group(1).strip().strip("`"))
    for match in _CALL_START.finditer(text):
        found.append(text[match.start() :])
    found += re.findall(r"(?m)^\s*([A-Za-z_]\w*\(.*)$", text)  # a call of an unknown name gets named
    return found


def _first_call(snippet: str) -> Action | None:
    """The action called at the start of `snippet`; ActionError when it calls an unknown name."""
    found = leading_call(snippet)
    if found is None:
        return None
    if found.name not in SIGNATURES:
        raise ActionError(f"unknown action {found.name!r} (known: {', '.join(SIGNATURES)})")
    return Action(found.name, _bind(found.name, found.call))


def parse_action(text: str) -> Action:
    """The first valid action in a model's output, or ActionError saying why there is none."""
    if not text or not text.strip():
        raise ActionError("empty output: write one action, e.g. click('12')")
    unknown: ActionError | None = None
    for snippet in _candidates(text):
        try:
            action = _first_call(snippet)
        except ActionError as exc:
            unknown = unknown or exc
            continue
        if action is not None:
            return action
    if unknown is not None:
        raise unknown
    raise ActionError("no action found: end your reply with one action such as click('12') or send_msg_to_user('done')")
