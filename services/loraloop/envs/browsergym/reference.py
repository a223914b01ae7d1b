"""BrowserGym's own `BrowserEnv`, on loraloop's Chromium, to compare against (the parity test, the benches).

Not used by episodes: it is what loraloop's kinds are checked against. BrowserGym launches two browsers per
reset (the task's, with `pw_chromium_kwargs`, which cannot carry `args`, and a chat window's with no executable
path at all, which would need Playwright's own download); both go through the one global Playwright's
`chromium.launch`, so wrapping that gives both the binary and flags loraloop's pool uses.
"""

from __future__ import annotations

import browsergym.core
from browsergym.core import _get_global_playwright
from browsergym.core.action.functions import check, uncheck
from browsergym.core.action.highlevel import HighLevelActionSet

from loraloop.envs.web.browser import LAUNCH_ARGS

# BrowserGym's default action subsets plus its own check/uncheck, which it ships but leaves out of "bid":
# loraloop's action set has both.
REFERENCE_ACTIONS = HighLevelActionSet(
    subsets=["chat", "infeas", "bid", "nav", "tab", "custom"], custom_actions=[check, uncheck]
)


def use_system_chromium(executable: str) -> None:
    """Point every Chromium launch BrowserGym makes at `executable` with loraloop's launch flags (once a process)."""
    chromium = _get_global_playwright().chromium
    if getattr(chromium.launch, "loraloop_executable", None) == executable:
        return
    launch = chromium.launch

    def launch_system(**kwargs):
        return launch(**{**kwargs, "executable_path": executable, "args": [*kwargs.get("args", []), *LAUNCH_ARGS]})

    launch_system.loraloop_executable = executable  # type: ignore[attr-defined]  # a mark on a function: patched once
    chromium.launch = launch_system


def release_playwright() -> None:
    """Stop BrowserGym's process-wide Playwright, which it starts once and never stops: its sync API keeps an
    event loop running in this thread, so any later `asyncio.run` in the process fails ("cannot be called from a
    running event loop"; an AReaL-style client in the same test worker did). The next `reference_env` starts one
    again."""
    if browsergym.core._PLAYWRIGHT is not None:
        browsergym.core._PLAYWRIGHT.stop()
        browsergym.core._set_global_playwright(None)


def reference_env(task_id: str, executable: str, **kwargs):
    """`gym.make("browsergym/<task_id>")` as BrowserGym runs it, on `executable`, with REFERENCE_ACTIONS; `kwargs`
    go to BrowserEnv (`task_kwargs`, `pre_observation_delay`, `slow_mo`)."""
    import gymnasium as gym

    from loraloop.tasks.browsergym.format import registered

    registered(task_id.split(".", 1)[0])
    use_system_chromium(executable)
    return gym.make(
        f"browsergym/{task_id}", action_mapping=REFERENCE_ACTIONS.to_python_code, disable_env_checker=True, **kwargs
    )
