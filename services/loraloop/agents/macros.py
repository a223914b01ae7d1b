"""Macros: multi-step skills an agent calls in one reply, expanded into the environment's own primitive actions.

With macros on, the agent may write a macro call where it would write an action (`Action:
search_and_open(query='gel pens')`, `Act: find_and_count(directory='/etc', pattern='*.conf')`).
`parse_macro` reads the call with `ast` (never runs it); the orchestrator then asks the macro for one
primitive action per step (`Macro.next_action(observation)`), each taken and recorded like any other
action (Step.halo.macro holds the call), until the macro says it is done (None).

The macros themselves are the kinds' (their AgentFacet's `macros`, kinds/spec.py): the web's act on the
elements of the current accessibility tree (envs/web/macros.py: `search_and_open(query)`,
`fill_form(fields, submit=None)`, `add_to_cart_and_checkout(quantity=None, shipping=None)`); the shell's
write AgentBench's text protocol (envs/shell/halo.py: `inspect_then_answer(path)`, `find_and_count(directory,
pattern)`). This module reads a call and runs whichever kind's macro it names, and names no kind.

A call with a missing or bad argument, or a macro that cannot go on (no search box on the page, the last
step failed), raises MacroError naming the argument or the element; the orchestrator shows it to the
agent as an error observation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from loraloop.calls import bind_arguments, leading_call
from loraloop.errors import MacroError
from loraloop.kinds.spec import EnvKind, MacroSpec, MacroSteps

__all__ = ["Macro", "MacroError", "macro_help", "parse_macro"]


@dataclass
class Macro:
    """A parsed macro call, expanding into primitive actions one step at a time."""

    name: str
    call: str  # the call as the agent wrote it (recorded in Step.halo.macro)
    spec: MacroSpec
    args: dict[str, Any]
    done: bool = False
    _steps: MacroSteps | None = field(default=None, repr=False)

    def next_action(self, observation: str) -> str | None:
        """The next primitive action for the current observation, in the env's own syntax; None when the macro is
        done. MacroError when it cannot go on (its target is not on the page, its last step failed)."""
        if self.done:
            return None
        try:
            if self._steps is None:
                self._steps = self.spec.steps(observation, **self.args)
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


def parse_macro(text: str, kind: EnvKind) -> Macro | None:
    """The macro an agent's reply calls, or None when it calls none of `kind`'s macros.

    The call is read with `ast` (literals only, never run). A call that cannot be read, or with a missing, unknown
    or bad argument, raises MacroError naming the macro and the argument.
    """
    catalogue = kind.agent.macros
    if not catalogue:
        return None
    for name, snippet in _calls(text, iter(catalogue)):
        found = leading_call(snippet)
        if found is None or found.name != name:
            raise MacroError(
                f"{name}: cannot read the call {snippet.splitlines()[0][:120]!r} "
                f"(write it as {catalogue[name].usage.split('  ')[0]} with literal arguments)"
            )
        spec = catalogue[name]
        args = bind_arguments(name, found.call, spec.params, MacroError)
        spec.check(args)
        return Macro(name, found.text, spec, args)
    return None


def macro_help(kind: EnvKind) -> str:
    """The lines the orchestrator appends to the system prompt when macros are on ('' for a kind without any)."""
    catalogue = kind.agent.macros
    if not catalogue:
        return ""
    where = kind.agent.macro_place
    lines = "\n".join(spec.usage for spec in catalogue.values())
    return f"\n\nMacros (several steps in one reply; write one {where}, with literal arguments):\n{lines}"
