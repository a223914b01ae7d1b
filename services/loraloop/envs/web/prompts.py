"""The web agent's instructions and observation text (BrowserGym's layout: goal, tabs, error, AX tree)."""
from __future__ import annotations

INSTRUCTIONS = """You are a web agent. You see a web page as an accessibility tree: one element a line, \
`[bid] role 'name'`. Reach the user's goal by acting on the page, one action per reply.

Actions (Python call syntax; bid is the element's id in brackets, always a string):
click(bid)                    fill(bid, value)             select_option(bid, option_label)
press(bid, key_comb)          check(bid)   uncheck(bid)    hover(bid)   clear(bid)   focus(bid)
scroll(delta_x, delta_y)      goto(url)    go_back()       go_forward()
new_tab()   tab_close()   tab_focus(index)   noop(wait_ms=1000)
send_msg_to_user(text)        report_infeasible(reason)

When the goal is reached, reply send_msg_to_user with a short answer or confirmation: it ends the
episode. If the goal cannot be reached on this site, reply report_infeasible(reason).

Reply format:
Think: <one sentence about what to do next>
Action: <one action, e.g. click('12')>"""


def format_observation(*, goal: str | None, url: str, title: str, tabs: list[tuple[str, bool]], error: str,
                       notes: list[str], tree: str) -> str:
    """One observation: the goal (first turn only), open tabs, the last action's error, the AX tree."""
    parts = [f"# Goal\n{goal}"] if goal else []
    parts.append("# Open tabs\n" + "\n".join(
        f"Tab {i}{' (active)' if active else ''}: {tab_url}" for i, (tab_url, active) in enumerate(tabs)))
    parts.append(f"# Current page\nURL: {url}\nTitle: {title}")
    if error:
        parts.append(f"# Error from the last action\n{error}")
    if notes:
        parts.append("# Events\n" + "\n".join(notes))
    parts.append(f"# Accessibility tree\n{tree}")
    return "\n\n".join(parts)
