"""Calls written in Python syntax (`click('12')`, `fill_form({'To': 'ann'})`), read with `ast`, never run.

BrowserGym's web actions (envs/web/actions.py) and the agents' macro calls (agents/macros.py) are both a
bare name called with literal arguments; this module reads such a call, binds its arguments and checks a
macro's string arguments. It sits at the bottom so that agents/ reads macro calls without importing a kind,
and the kinds' macros (envs/<kind>/) check theirs without importing agents/.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Generator
from typing import Any, NamedTuple

from loraloop.errors import MacroError

REQUIRED = object()  # a parameter's default when the call must give it
MacroSteps = Generator[str, str, None]  # a macro's primitive actions; it is sent the observation after each


def bind_arguments(
    name: str, call: ast.Call, params: tuple[tuple[str, Any], ...], error: type[Exception] = ValueError
) -> dict[str, Any]:
    """The call's literal arguments by parameter name, defaults filled in; `error` names what is wrong (an argument
    missing, unknown, given twice or not a literal). Shared by web actions and macro calls."""
    try:
        positional = [ast.literal_eval(a) for a in call.args]
        keywords = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    except (ValueError, SyntaxError, TypeError) as exc:
        raise error(f"{name}: arguments must be literals (strings, numbers, lists), got {ast.unparse(call)!r}") from exc
    if len(positional) > len(params):
        raise error(f"{name} takes at most {len(params)} argument(s), got {len(positional)}")
    args = dict(zip((p for p, _ in params), positional))
    for key, value in keywords.items():
        if key not in dict(params):
            raise error(f"{name} has no parameter {key!r} (parameters: {', '.join(p for p, _ in params)})")
        if key in args:
            raise error(f"{name}: parameter {key!r} given twice")
        args[key] = value
    for param, default in params:
        if param not in args:
            if default is REQUIRED:
                raise error(f"{name} needs argument {param!r}")
            args[param] = default
    return args


class LeadingCall(NamedTuple):
    """A call of a bare name read from text: the parsed call, the name it calls, its text."""

    call: ast.Call
    name: str
    text: str


def leading_call(snippet: str) -> LeadingCall | None:
    """The call of a bare name at the start of `snippet`: the shortest prefix ending in ')' that parses as one
    (read by `ast`, never run); None when no prefix does."""
    for end in (i + 1 for i, ch in enumerate(snippet) if ch == ")"):
        try:
            tree = ast.parse(snippet[:end].strip(), mode="eval")
        except SyntaxError:
            continue
        if isinstance(tree.body, ast.Call) and isinstance(tree.body.func, ast.Name):
            return LeadingCall(tree.body, tree.body.func.id, snippet[:end].strip())
    return None


def text_argument(name: str, value: Any, optional: bool = False) -> None:
    """A macro's string argument: MacroError naming it unless a non-empty string (or None when optional)."""
    if optional and value is None:
        return
    if not isinstance(value, str) or not value.strip():
        raise MacroError(f"{name} must be a non-empty string, got {value!r}")


def text_arguments(macro: str, *params: str) -> Callable[[dict], None]:
    """The check of a macro whose arguments `params` are all required strings."""

    def check(args: dict) -> None:
        for param in params:
            text_argument(f"{macro}: argument {param!r}", args[param])

    return check
