"""The web agent's instructions, observation text (BrowserGym's layout: goal, tabs, error, AX tree) and prompts."""

from __future__ import annotations

import re

from loraloop.envs.base import Message

ACTIONS_HELP = """You are a web agent. You see a web page as an accessibility tree: one element a line, \
`[bid] role 'name'`. Reach the user's goal by acting on the page, one action per reply.

Actions (Python call syntax; bid is the element's id in brackets, always a string):
click(bid)                    fill(bid, value)             select_option(bid, option_label)
press(bid, key_comb)          check(bid)   uncheck(bid)    hover(bid)   clear(bid)   focus(bid)
scroll(delta_x, delta_y)      goto(url)    go_back()       go_forward()
new_tab()   tab_close()   tab_focus(index)   noop(wait_ms=1000)
send_msg_to_user(text)        report_infeasible(reason)
"""
INSTRUCTIONS = (
    ACTIONS_HELP
    + """
When the goal is reached, reply send_msg_to_user with a short answer or confirmation: it ends the
episode. If the goal cannot be reached on this site, reply report_infeasible(reason).

Reply format:
Think: <one sentence about what to do next>
Action: <one action, e.g. click('12')>"""
)


ERROR_HEADING = "# Error from the last action"  # the observation's section that says the last action failed


def format_observation(
    *, goal: str | None, url: str, title: str, tabs: list[tuple[str, bool]], error: str, notes: list[str], tree: str
) -> str:
    """One observation: the goal (first turn only), open tabs, the last action's error, the AX tree."""
    parts = [f"# Goal\n{goal}"] if goal else []
    parts.append(
        "# Open tabs\n"
        + "\n".join(f"Tab {i}{' (active)' if active else ''}: {tab_url}" for i, (tab_url, active) in enumerate(tabs))
    )
    parts.append(f"# Current page\nURL: {url}\nTitle: {title}")
    if error:
        parts.append(f"{ERROR_HEADING}\n{error}")
    if notes:
        parts.append("# Events\n" + "\n".join(notes))
    parts.append(f"# Accessibility tree\n{tree}")
    return "\n\n".join(parts)


def page_url(observation: str) -> str | None:
    """The current page's URL in an observation `format_observation` wrote (None in any other text)."""
    found = re.search(r"^# Current page\nURL: (\S+)", observation, re.M)
    return found.group(1) if found else None


def _goal(first_observation: str) -> str:
    """The `# Goal` section of a web episode's first observation."""
    head, _, rest = first_observation.partition("# Goal\n")
    return rest.split("\n\n# ", 1)[0].strip() if not head.strip() else ""


def _action_line(output: str) -> str:
    """The action a reply carried, for the history: its `Action:` line, else a call-shaped line."""
    lines = [line.strip().strip("`") for line in output.strip().splitlines() if line.strip()]
    acts = [line.split(":", 1)[1].strip() for line in lines if line.lower().startswith("action:")]
    acts = acts or [line for line in lines if re.match(r"^[a-z_]+\(", line)]
    return acts[0][:200] if acts else "(no valid action)"


def build_web_messages(
    instructions: str,
    _examples: list[Message],
    first_observation: str,
    turns: list[tuple[str, str]],
    char_budget: int = 4000,
) -> list[Message]:
    """System + one user message: goal, the past actions (newest kept), then only the current page.

    BrowserGym's agents prompt this way: the page is large and only its latest state matters, so
    earlier pages are not repeated; the page text is cut to what the budget leaves.
    """
    current = turns[-1][1] if turns else first_observation
    if current.startswith("# Goal\n"):
        current = current.split("\n\n", 1)[1] if "\n\n" in current else ""
    goal = f"# Goal\n{_goal(first_observation)}\n\n"
    history: list[str] = []
    used = len(goal)
    for i in range(len(turns) - 1, -1, -1):
        line = f"{i + 1}. {_action_line(turns[i][0])}"
        if used + len(line) > char_budget // 3:
            history.insert(0, f"(… {i + 1} earlier actions)")
            break
        history.insert(0, line)
        used += len(line) + 1
    past = "# Past actions\n" + "\n".join(history) + "\n\n" if history else ""
    room = max(char_budget - len(goal) - len(past), 500)
    page = current if len(current) <= room else current[:room] + "\n… (page cut to fit the prompt)"
    return [{"role": "system", "content": instructions}, {"role": "user", "content": goal + past + page}]
