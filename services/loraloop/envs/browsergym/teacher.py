"""The scripted MiniWoB++ solver: reads only the goal text and the observation (the AX tree with bids), never the
page's internals, and writes one BrowserGym action a turn. It is the start of issue 28's scripted teacher.

Each solved task type has a strategy: a function of the goal, the page's nodes and the turn that returns the next
action, or None when it sees no way on (the teacher then reports it infeasible, which ends the episode). Most are
stateless (they read what the page shows: a box's value, a checkbox's state), so a step that failed is retried.
`SOLVED` lists the types with a strategy; bench/miniwob_teacher.py measures their success per type.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from loraloop.envs.browsergym.teacher_navigation import navigation_strategies
from loraloop.envs.browsergym.teacher_page import (
    BUTTONS,
    CLICKABLE,
    Node,
    Strategy,
    boxes,
    click,
    fill_all,
    fill_then,
    find,
    goal_of,
    nodes,
    quoted,
    submit,
    table_values,
)
from loraloop.envs.web.prompts import ERROR_HEADING
from loraloop.errors import TaskSkipped
from loraloop.replies import Reply

__all__ = ["SOLVED", "STRATEGIES", "Node", "ScriptedBrowserGymTeacher", "goal_of", "nodes", "solve"]

# ---- strategies: (goal, page, turn, history) -> action or None ------------------------------------------------


def named_button(goal, page, turn, history):
    """click-button, click-test-2, unicode-test, click-dialog-2: the button the goal names."""
    names = quoted(goal) or re.findall(r"button (\S+?)\.?$", goal)
    if not names:
        return None
    return click(find(page, names[-1], BUTTONS) or (find(page, "Close", BUTTONS) if names[-1] == "x" else None))


def only_button(goal, page, turn, history):
    """click-test: the one button."""
    return click(find(page, None, BUTTONS))


def button_sequence(goal, page, turn, history):
    """click-button-sequence: ONE, then TWO (each once it was clicked or pressed)."""
    for name in re.findall(r"button (\w+)", goal):
        button = find(page, name, BUTTONS)
        if button is None:
            return None
        if not any(a in (f"click({button.bid!r})", f"press({button.bid!r}, 'Enter')") for a in history):
            return click(button)
    return None


def close_dialog(goal, page, turn, history):
    """click-dialog: the dialog's close button."""
    return click(find(page, "Close", BUTTONS))


def named_text(goal, page, turn, history):
    """click-link, navigate-tree (top level): the element (a link or a clickable text) named in the goal."""
    target = quoted(goal)[-1]
    alone = [
        n for n in page if n.bid and n.name == target and n.role in CLICKABLE and sum(m.bid == n.bid for m in page) == 1
    ]  # a text of its own element, not part of a sentence
    return click(alone[0] if alone else find(page, target, CLICKABLE))


def tab_named(goal, page, turn, history):
    """click-tab: the tab the goal names."""
    target = re.search(r"Tab #\d+", goal)
    return click(find(page, target.group(0), ("tab", "link"))) if target else None


def link_in_tabs(goal, page, turn, history):
    """click-tab-2 (and its easy/medium/hard): the link on the open tab, else the next tab."""
    target = quoted(goal)[-1]
    alone = [
        n
        for n in page
        if n.bid and n.name == target and n.role in ("link", "StaticText") and sum(m.bid == n.bid for m in page) == 1
    ]
    if alone:
        return click(alone[0])
    tabs = [n for n in page if n.role == "tab" and n.bid]
    return click(tabs[min(turn + 1, len(tabs) - 1)]) if tabs else None


def expand_then_submit(goal, page, turn, history):
    """click-collapsible: open the section, then Submit."""
    if turn == 0:
        return click(find(page, None, ("tab",)))
    return submit(page)


def link_in_sections(goal, page, turn, history):
    """click-collapsible-2: open the sections in turn until the link shows."""
    target = quoted(goal)[-1]
    alone = [
        n
        for n in page
        if n.bid and n.name == target and n.role in ("link", "StaticText") and sum(m.bid == n.bid for m in page) == 1
    ]
    if alone:
        return click(alone[0])
    sections = [n for n in page if n.role == "tab" and n.bid and n.name.startswith("Section")]
    return click(sections[min(turn, len(sections) - 1)]) if sections else None


def listed(goal: str) -> list[str]:
    """`Select A, B and C and click Submit.` -> [A, B, C] (an empty selection: [])."""
    found = re.search(r"Select (.*?) and click Submit", goal)
    if not found or found.group(1).strip().lower() in ("nothing", "no items"):
        return []
    return [w.strip() for w in re.split(r",\s*|\s+and\s+", found.group(1)) if w.strip()]


def checkboxes(goal, page, turn, history):
    """click-checkboxes, click-checkboxes-large, click-checkboxes-transfer: tick the named boxes, then Submit."""
    wanted = set(listed(goal))
    for box in (n for n in page if n.role == "checkbox" and n.bid):
        if (box.name in wanted) != (box.prop("checked") == "true"):
            return click(box)
    return submit(page)


def option(goal, page, turn, history):
    """click-option: the named radio button, then Submit."""
    wanted = listed(goal)
    radio = find(page, wanted[0], ("radio",)) if wanted else None
    if radio is not None and radio.prop("checked") != "true":
        return click(radio)
    return submit(page)


def choose_list(goal, page, turn, history):
    """choose-list: pick the item in the list, then Submit."""
    found = re.search(r"Select (.*) from the list", goal)
    box = find(page, None, ("combobox", "listbox"))
    if not found or box is None:
        return None
    if box.prop("value") != found.group(1):
        return f"select_option({box.bid!r}, {found.group(1)!r})"
    return submit(page)


def enter_text(goal, page, turn, history):
    """enter-text, enter-text-dynamic, enter-text-2 (upper case): the quoted text into the box, then Submit."""
    text = quoted(goal)[0]
    if "upper case" in goal:
        text = text.upper()
    elif "lower case" in goal:
        text = text.lower()
    found = boxes(page)
    return fill_then(found[0] if found else None, text, lambda: submit(page), history)


def enter_password(goal, page, turn, history):
    """enter-password: the password in both boxes, then Submit."""
    password = quoted(goal)[0]
    return fill_all([password, password], page, lambda: submit(page), history)


def login(goal, page, turn, history):
    """login-user: user name and password, then Login."""
    user, password = quoted(goal)[:2]
    return fill_all([user, password], page, lambda: submit(page, "Login"), history)


ORDINALS = {"1st": 0, "2nd": 1, "3rd": 2, "4th": 3, "5th": 4}


def focus_text(goal, page, turn, history):
    """focus-text, focus-text-2: click the (nth) text box."""
    nth = re.search(r"(\d+(?:st|nd|rd|th)) input", goal)
    found = boxes(page)
    index = ORDINALS.get(nth.group(1), int(re.sub(r"\D", "", nth.group(1))) - 1) if nth else 0
    return click(found[index]) if len(found) > index else None


def arithmetic(goal, page, turn, history):
    """simple-arithmetic: `a op b =` on the page, the result into the box, then Submit."""
    for n in page:
        m = re.fullmatch(r"(-?\d+) ([-+x*/]) (-?\d+) =", n.name)
        if m:
            a, op, b = int(m[1]), m[2], int(m[3])
            value = {"+": a + b, "-": a - b, "x": a * b, "*": a * b, "/": a // b if b else 0}[op]
            found = boxes(page)
            return fill_then(found[0] if found else None, str(value), lambda: submit(page), history)
    return None


def algebra(goal, page, turn, history):
    """simple-algebra: `a + x = b` (or `x - a = b`, ...) on the page, x into the box, then Submit."""
    for n in page:
        m = re.fullmatch(r"(\S+) ([-+]) (\S+) = (-?\d+)", n.name)
        if m and "x" in (m[1], m[3]):
            total, op = int(m[4]), m[2]
            if m[1] == "x":  # x + a = b, x - a = b
                value = total - int(m[3]) if op == "+" else total + int(m[3])
            else:  # a + x = b, a - x = b
                value = total - int(m[1]) if op == "+" else int(m[1]) - total
            found = boxes(page)
            return fill_then(found[0] if found else None, str(value), lambda: submit(page), history)
    return None


def read_table(goal, page, turn, history):
    """read-table: the value beside the named row's key, into the box, then Submit."""
    key = re.search(r"value of (.*) into", goal)
    value = table_values(page).get(key.group(1)) if key else None
    if value is None:
        return None
    found = boxes(page)
    return fill_then(found[0] if found else None, value, lambda: submit(page), history)


def email(goal, page, turn, history):
    """email-inbox (reply, forward, delete, mark important): open the sender's email, then act on it."""
    sender = re.search(r"email by (\S+?)(?: and|\.|,)", goal)
    if not sender:
        return None
    typed = [n for n in page if n.role == "textbox" and n.bid]
    if typed and find(page, "to:", ("StaticText",)):  # the reply or forward form is open
        if "forward" in goal:
            to = re.search(r"forward (?:that|the) email to (\S+?)\.?$", goal)
            return fill_then(typed[0], to.group(1) if to else "", lambda: click(_send_icon(page)), history)
        return fill_then(typed[-1], quoted(goal)[-1], lambda: click(_send_icon(page)), history)
    if find(page, "Reply", ("StaticText",)) is None:  # the inbox: open the email
        return click(find(page, sender.group(1), ("StaticText",)))
    if "reply" in goal:
        return click(find(page, "Reply", ("StaticText",)))
    if "forward" in goal:
        return click(find(page, "Forward", ("StaticText",)))
    icons = [n for n in page if n.role == "image" and n.bid]  # the open email's back arrow, trash, star
    if "star" in goal or "important" in goal:
        return click(icons[2]) if len(icons) > 2 else None
    if "trash" in goal or "delete" in goal:
        return click(icons[1]) if len(icons) > 1 else None
    return None


def _send_icon(page: list[Node]) -> Node | None:
    """The send icon of the reply or forward form: the first image of the form (before its boxes)."""
    images = [n for n in page if n.role == "image" and n.bid]
    return images[-1] if images else None


def autocomplete(goal, page, turn, history):
    """use-autocomplete: type the start into the box, pick the suggestion that fits, then Submit."""
    parts = quoted(goal)
    start = parts[0] if parts else ""
    end = parts[1] if len(parts) > 1 and "ends with" in goal else ""
    box = next(iter(boxes(page)), None)
    if box is None:
        return None
    if any(a.startswith("click(") and a != f"click({box.bid!r})" for a in history):
        return submit(page)  # a suggestion was picked
    if (box.prop("value") or "") != start:
        return f"keyboard_type({start!r})" if f"click({box.bid!r})" in history else click(box)
    suggestions = [
        n
        for n in page
        if n.role in ("menuitem", "option", "listitem", "StaticText")
        and n.bid
        and n.name.startswith(start)
        and n.name.endswith(end)
        and (n.name != start or end)
    ]
    if suggestions:
        return click(suggestions[0])
    return "noop(500)" if "noop(500)" not in history else submit(page)  # the list shows after a delay


def enter_date(goal, page, turn, history):
    """enter-date: `MM/DD/YYYY` into the date input (as ISO, what a date input takes), then Submit."""
    found = re.search(r"(\d\d)/(\d\d)/(\d{4})", goal)
    box = find(page, None, ("Date", "date"))
    if not found or box is None:
        return None
    month, day, year = found.groups()
    return fill_then(box, f"{year}-{month}-{day}", lambda: submit(page), history)


def enter_time(goal, page, turn, history):
    """enter-time: `H:MM AM` into the time input (as 24-hour `HH:MM`), then Submit."""
    found = re.search(r"(\d{1,2}):(\d\d) ?([AP]M)", goal)
    box = find(page, None, ("InputTime", "time"))
    if not found or box is None:
        return None
    hour = int(found[1]) % 12 + (12 if found[3] == "PM" else 0)
    return fill_then(box, f"{hour:02d}:{found[2]}", lambda: submit(page), history)


def copy_paste(goal, page, turn, history):
    """copy-paste, copy-paste-2: the (nth) text area's text into the empty box, then Submit."""
    if any(action.startswith("fill(") for action in history):
        return submit(page)
    found = boxes(page)
    sources = [b for b in found if b.prop("value")]
    empty = [b for b in found if not b.prop("value")]
    nth = re.search(r"(\d+)(?:st|nd|rd|th) text area", goal)
    index = int(nth.group(1)) - 1 if nth else 0
    if len(sources) <= index or not empty:
        return None
    return f"fill({empty[0].bid!r}, {sources[index].prop('value')!r})"


def find_word(goal, page, turn, history):
    """find-word: the nth word of the paragraph (punctuation dropped) into the box, then Submit."""
    nth = re.search(r"(\d+)(?:st|nd|rd|th) word", goal)
    paragraph = next((n.name for n in page if n.role == "StaticText" and len(n.name.split()) > 3), "")
    words = [w.strip(".,;:!?") for w in paragraph.split()]
    if not nth or len(words) < int(nth.group(1)):
        return None
    found = boxes(page)
    return fill_then(found[0] if found else None, words[int(nth.group(1)) - 1], lambda: submit(page), history)


def scroll_list(goal, page, turn, history):
    """click-scroll-list: select the named items in the list, then Submit."""
    found = re.search(r"Select (.*) from the scroll list", goal)
    box = find(page, None, ("listbox",))
    if not found or box is None:
        return None
    names = [w.strip() for w in found.group(1).split(",") if w.strip()]
    action = f"select_option({box.bid!r}, {names!r})"
    return action if action not in history else submit(page)


def odd_or_even(goal, page, turn, history):
    """odd-or-even: for each number, its Odd or Even button (the buttons around it), then Submit."""
    picks = []
    for i, node in enumerate(page):
        if node.role == "StaticText" and re.fullmatch(r"-?\d+", node.name):
            before = [n for n in page[:i] if n.role == "button" and n.name == "Odd"]
            after = [n for n in page[i:] if n.role == "button" and n.name == "Even"]
            target = before[-1] if int(node.name) % 2 else (after[0] if after else None)
            if target is None:
                return None
            picks.append(click(target))
    return picks[turn] if turn < len(picks) else submit(page)


def text_transform(goal, page, turn, history):
    """text-transform: the one-letter texts before the box (the distorted captcha, letter by letter) into it, as
    they are, then Submit."""
    box = next(iter(boxes(page)), None)
    if box is None:
        return None
    letters = "".join(n.name for n in page[: page.index(box)] if n.role == "StaticText" and len(n.name) == 1)
    return fill_then(box, letters, lambda: submit(page), history) if letters else None


WIDGET_ROLES = {"button": ("button",), "checkbox": ("checkbox",), "radio": ("radio",)}


def click_widget(goal, page, turn, history):
    """click-widget: a widget of the named kind (buttons, checkboxes and radio buttons; text inputs and text areas
    look alike in the tree, so those are left)."""
    kind = quoted(goal)
    roles = WIDGET_ROLES.get(kind[0]) if kind else None
    return click(find(page, None, roles)) if roles else None


STRATEGIES: dict[str, Strategy] = {
    "click-test": only_button,
    "click-test-2": named_button,
    "click-button": named_button,
    "unicode-test": named_button,
    "click-dialog-2": named_button,
    "click-dialog": close_dialog,
    "click-button-sequence": button_sequence,
    "click-link": named_text,
    "click-tab": tab_named,
    "click-tab-2": link_in_tabs,
    "click-tab-2-easy": link_in_tabs,
    "click-tab-2-medium": link_in_tabs,
    "click-tab-2-hard": link_in_tabs,
    "click-collapsible": expand_then_submit,
    "click-collapsible-nodelay": expand_then_submit,
    "click-collapsible-2": link_in_sections,
    "click-collapsible-2-nodelay": link_in_sections,
    "click-checkboxes": checkboxes,
    "click-checkboxes-large": checkboxes,
    "click-checkboxes-transfer": checkboxes,
    "click-option": option,
    "choose-list": choose_list,
    "enter-text": enter_text,
    "enter-text-dynamic": enter_text,
    "enter-text-2": enter_text,
    "enter-password": enter_password,
    "login-user": login,
    "focus-text": focus_text,
    "focus-text-2": focus_text,
    "simple-arithmetic": arithmetic,
    "simple-algebra": algebra,
    "read-table": read_table,
    "email-inbox": email,
    "email-inbox-noscroll": email,
    "use-autocomplete": autocomplete,
    "use-autocomplete-nodelay": autocomplete,
    "enter-date": enter_date,
    "enter-time": enter_time,
    "copy-paste": copy_paste,
    "copy-paste-2": copy_paste,
    "find-word": find_word,
    "click-scroll-list": scroll_list,
    "odd-or-even": odd_or_even,
    "click-widget": click_widget,
    "text-transform": text_transform,
    **navigation_strategies(email),
}
SOLVED = tuple(sorted(STRATEGIES))


def solve(task_type: str, goal: str, observation: str, turn: int, history: list[str]) -> str:
    """The next action for a MiniWoB task type on the page the observation shows, given the actions sent so far
    (`history`; `turn` is kept for callers, the strategies count what the page took); `report_infeasible(...)` when
    the type has no strategy, the strategy sees no way on, or an action failed twice."""
    strategy = STRATEGIES.get(task_type)
    if strategy is None:
        return f"report_infeasible({f'no scripted strategy for {task_type}'!r})"
    failed = history[-1] if history and f"\n{ERROR_HEADING}\n" in observation else None
    done = history[:-1] if failed else history  # what the page took: a failed action is not a step made
    action = strategy(goal, nodes(observation), len(done), done)
    clicked = re.fullmatch(r"click\(('[^']+')\)", action or "")
    if clicked and failed in (action, f"press({clicked.group(1)}, 'Enter')"):
        if failed == action:  # another element covers it (click-test-2): a focused button takes Enter as a click
            return f"press({clicked.group(1)}, 'Enter')"
        action = failed
    if action and action == failed:
        return f"report_infeasible({f'{task_type}: {action} failed twice'!r})"
    return action or f"report_infeasible({f'{task_type}: no next step on this page'!r})"


class ScriptedBrowserGymTeacher:
    """An expert policy for the MiniWoB types in SOLVED: each turn, the next action from the goal and the page."""

    def __init__(self, task, page: Callable[[], str] | None = None) -> None:
        if task.benchmark != "miniwob" or task.type not in STRATEGIES:
            raise TaskSkipped(
                f"task {task.index}: the scripted teacher has no strategy for {task.task_id} "
                f"(it solves {len(SOLVED)} MiniWoB types)"
            )
        self.type = task.type
        self.page = page  # the whole current observation (a prompt may cut a long page)
        self.goal = ""
        self.history: list[str] = []

    def act(self, messages: list[dict[str, str]]) -> Reply:
        """Write the next action as `Think:`/`Action:` text for the page in the last message."""
        started = time.perf_counter()
        observation = self.page() if self.page else messages[-1]["content"]
        self.goal = self.goal or goal_of(observation) or goal_of(messages[-1]["content"])
        action = solve(self.type, self.goal, observation, len(self.history), self.history)
        self.history.append(action)
        text = f"Think: {self.type}: the next step towards the goal.\nAction: {action}"
        return Reply(text, "teacher", "scripted-teacher", (time.perf_counter() - started) * 1000)
