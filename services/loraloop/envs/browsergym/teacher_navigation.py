"""The scripted MiniWoB++ solver's strategies for types that take more than one page: forms whose labels move,
menus opened by hovering, date pickers, paged results, feedback to read, popups, feeds of posts.

Like teacher.py's, each reads only the goal and the observation's AX tree (and the actions it sent), and returns
the next BrowserGym action or None. Goals are parsed with MiniWoB's own field extractors (`miniwob.fields`) where
it has one; the natural-language forward (its extractor returns no fields at train time) with the templates its
page writes the goal from.
"""

from __future__ import annotations

import calendar
import re

from miniwob.fields import get_field_extractor

from loraloop.envs.browsergym.teacher_page import (
    BUTTONS,
    Node,
    Strategy,
    boxes,
    click,
    fill_all,
    find,
    submit,
    table_values,
)


def fields(task_type: str, goal: str) -> dict[str, str] | None:
    """The goal's fields by MiniWoB's extractor for the type (None when the goal does not fit it)."""
    try:
        return {key: value for key, value in get_field_extractor(task_type)(goal)}
    except ValueError:
        return None


FORM_LABELS = {"year": ("year", "date")}  # a field's words in its label, where they are not its own name
LABELS = ("StaticText", "rowheader", "columnheader", "cell", "LabelText")


def press_last(page: list[Node], names: tuple[str, ...]) -> str | None:
    """Click the last element named one of `names` (a form's Submit or Search, a div on some layouts)."""
    hits = [n for n in page if n.bid and n.name.strip().lower() in names]
    return click(hits[-1]) if hits else None


def labelled_form(goal, page, turn, history):
    """multi-orderings, multi-layouts: each box gets the value its label names (`Director Name` is the director,
    `Released Date` the year; labels and boxes pair in page order, whatever the layout), then Submit, Search or
    Go!."""
    wanted = fields("multi-layouts", goal)
    if wanted is None:
        return None
    order = []
    for n in page:
        words = n.name.strip().rstrip(":").lower().split()
        key = next((key for key in wanted if set(FORM_LABELS.get(key, (key,))) & set(words)), None)
        if key and n.role in LABELS and key not in order:
            order.append(key)
    if len(order) != len(wanted):
        return None
    return fill_all(
        [wanted[key] for key in order], page, lambda: press_last(page, ("submit", "search", "go!")), history
    )


def login_popup(goal, page, turn, history):
    """login-user-popup: the popup that a box's focus may open disables the form, so a fill can be lost: Cancel it
    (its OK ends the episode), and fill each box again until it shows its value (a password box shows one dot a
    character), then Login (the form's button, `OK` on this page)."""
    popup = find(page, "Cancel", BUTTONS)
    if popup is not None:
        return click(popup)
    wanted = fields("login-user", goal)
    found = boxes(page)
    if wanted is None or len(found) < 2:
        return None
    user, password = wanted["username"], wanted["password"]
    if found[0].prop("value") != user:
        return f"fill({found[0].bid!r}, {user!r})"
    if len(found[1].prop("value") or "") != len(password):
        return f"fill({found[1].bid!r}, {password!r})"
    return submit(page, "Login") or submit(page, "OK")


def read_table_2(goal, page, turn, history):
    """read-table-2: each box gets the table's value for the label before it, then Submit."""
    table = table_values(page)
    values, label = [], None
    for n in page:
        if n.role == "StaticText" and n.name.endswith(":"):
            label = n.name[:-1].strip()
        elif n.bid and n.role == "textbox":
            if label not in table:
                return None
            values.append(table[label])
    return fill_all(values, page, lambda: submit(page), history) if values else None


MONTHS = {name: number for number, name in enumerate(calendar.month_name) if name}


def choose_date(goal, page, turn, history):
    """choose-date-easy (and its kin): open the date picker, go to the month, click the day, then Submit."""
    wanted = fields("choose-date", goal)
    box = find(page, None, ("textbox",))
    if wanted is None or box is None:
        return None
    month, day, year = int(wanted["month"]), int(wanted["day"]), int(wanted["year"])
    if box.prop("value") == f"{month:02d}/{day:02d}/{year}":
        return submit(page)
    shown = [n.name for n in page if n.role == "StaticText"]
    month_shown = next((MONTHS[name] for name in shown if name in MONTHS), None)
    year_shown = next((int(name) for name in shown if re.fullmatch(r"\d{4}", name)), None)
    if month_shown is None or year_shown is None:
        return click(box)  # the picker opens on a click in the box
    if (year_shown, month_shown) != (year, month):
        return click(
            find(page, "Prev" if (year, month) < (year_shown, month_shown) else "Next", ("StaticText", "link"))
        )
    return click(find(page, str(day), ("link",)))


def menu_path(goal, page, turn, history):
    """click-menu: hover each menu of the path `A>B>C` (a click on a menu ends the episode), wait once for its
    submenu, click the last item."""
    wanted = fields("click-menu", goal)
    if wanted is None:
        return None
    path = wanted["target"].split(">")
    items = [n for n in page if n.role == "menuitem" and n.bid]
    if not items:
        return None
    top = min(n.depth for n in items)
    reached: list[Node] = []
    for name in path:  # the first at the top level, each next inside the submenu of the one before
        if reached:
            inside = []
            for n in items[items.index(reached[-1]) + 1 :]:
                if n.depth <= reached[-1].depth:
                    break
                inside.append(n)
        else:
            inside = [n for n in items if n.depth == top]
        found = next((n for n in inside if n.name == name), None)
        if found is None:
            break
        reached.append(found)
    if not reached:
        return None
    if len(reached) == len(path):
        return click(reached[-1])
    hover = f"hover({reached[-1].bid!r})"
    if hover not in history:
        return hover
    return "noop(500)" if history[-1] == hover else None  # its submenu shows after a delay


def guess_number(goal, page, turn, history):
    """guess-number: binary search on 0-9, a guess filled, then submitted. The bounds come from the guesses sent
    (each chosen after the feedback on the one before: a lower guess means "lower") and the page's feedback on the
    last guess."""
    box = next(iter(boxes(page)), None)
    if box is None:
        return None
    if history and history[-1].startswith("fill("):
        return submit(page)
    guesses = [int(m[1]) for action in history if (m := re.fullmatch(r"fill\('[^']+', '(\d+)'\)", action))]
    low, high = 0, 9
    for guess, following in zip(guesses, guesses[1:]):
        low, high = (low, guess - 1) if following < guess else (guess + 1, high)
    if guesses:  # the last guess was submitted: the page says which way to go
        feedback = " ".join(n.name for n in page if n.role == "StaticText")
        if "lower" in feedback:
            high = guesses[-1] - 1
        elif "higher" in feedback:
            low = guesses[-1] + 1
        else:
            return None
    return f"fill({box.bid!r}, {str((low + high) // 2)!r})" if low <= high else None


PHONE_FIELDS = {"phone number": "Phone:", "email": "Email:", "address": "Address:"}


def phone_book(goal, page, turn, history):
    """phone-book: page through the contacts (`>`) to the name, then click the asked field's link."""
    wanted = fields("phone-book", goal)
    if wanted is None or wanted["target"] not in PHONE_FIELDS:
        return None
    heading = next((i for i, n in enumerate(page) if n.role == "heading" and n.name == wanted["name"]), None)
    if heading is None:
        return click(find(page, ">", ("link",)))
    label = next((i for i, n in enumerate(page[heading:], heading) if n.name == PHONE_FIELDS[wanted["target"]]), None)
    link = next((n for n in page[label:] if n.role == "link" and n.bid), None) if label is not None else None
    return click(link)


# email-inbox-forward-nl's goal templates (its page's NL_TEMPLATES): NAME sent the email, DEST gets it
FORWARD_TEMPLATES = [
    re.compile("^" + re.escape(t).replace("NAME", r"(?P<name>\S+?)").replace("DEST", r"(?P<dest>\S+?)") + "$")
    for t in (
        "Find the email by NAME and forward that email to DEST.",
        "Locate the email by NAME. Forward that email to DEST.",
        "Look for the email from NAME and forward to DEST.",
        "Forward to DEST the email from NAME.",
        "Send DEST the email you got from NAME.",
        "Go to the email by NAME. Send it to DEST.",
        "Send to DEST the email you got from NAME.",
        "Forward the email from NAME to DEST.",
        "Send DEST the email from NAME.",
        "Please find the message by NAME, then send it to DEST.",
        "Please forward the information from NAME to DEST.",
        "DEST wants the email you got from NAME.",
        "DEST wants the email NAME sent to you.",
        "The mail by NAME should be forwarded to DEST.",
        "Please forward to DEST the email by NAME.",
        "Give DEST the message you received from NAME,",
        "Forward the mail by NAME to DEST.",
        "Go to the message from NAME and send it to DEST.",
        "DEST is waiting for the email by NAME.",
        "NAME wants his or her message to be sent to DEST.",
        "I want the mail by NAME to be sent to DEST.",
        "Forward to DEST the email you got from NAME.",
        "Please forward the message from NAME to DEST.",
        "Please find the mail by NAME. Forward it to DEST.",
        "Navigate to the message from NAME and send it to DEST.",
        "Forward DEST the email from NAME.",
        "Forward DEST the message NAME sent you.",
        "Send DEST the information NAME sent to you.",
        "Search for the mail NAME sent you and send it to DEST.",
    )
]


def forward_nl(email: Strategy) -> Strategy:
    """email-inbox-forward-nl: the sender and the recipient read off the goal's template, then email-inbox's
    forward (`email`, teacher.py's strategy) on the goal it would have had."""

    def strategy(goal, page, turn, history):
        found = next((m for t in FORWARD_TEMPLATES if (m := t.match(goal.strip()))), None)
        if found is None:
            return None
        plain = f"Find the email by {found['name']} and forward that email to {found['dest']}."
        return email(plain, page, turn, history)

    strategy.__doc__ = forward_nl.__doc__
    return strategy


def posts(page: list[Node], user: str) -> list[list[Node]]:
    """Each post by `user`: its nodes, from its handle to the next post's name (the line before the next handle),
    its menu's items included once the menu is open."""
    handles = [i for i, n in enumerate(page) if n.role == "StaticText" and n.name.startswith("@")]
    return [
        page[start : end - 1] for start, end in zip(handles, handles[1:] + [len(page) + 1]) if page[start].name == user
    ]


def icons(post: list[Node]) -> list[Node]:
    """A post's icons (images with a bid) in page order: reply, retweet, like, share (social-media's menu)."""
    return [n for n in post if n.role == "image" and n.bid]


POST_ICONS = {"reply": 0, "retweet": 1, "like": 2, "share": 3}


def social_media_some(goal, page, turn, history):
    """social-media-some: the button on the first N posts by the user (each clicked once), then Submit."""
    wanted = fields("social-media-some", goal)
    if wanted is None or wanted["button"].lower() not in POST_ICONS:
        return None
    index = POST_ICONS[wanted["button"].lower()]
    todo = [click(shown[index]) for post in posts(page, wanted["user"]) if len(shown := icons(post)) > index]
    todo = todo[: int(wanted["amount"])]
    left = [action for action in todo if action not in history]
    return left[0] if left else submit(page) or press_last(page, ("submit",))


def social_media(goal, page, turn, history):
    """social-media: the user's first post's Reply, Retweet or Like icon; the other buttons (Share via DM, Mute
    @user...) are items of the post's menu, opened by its fourth icon. A menu item's text has no bid: its list
    item (the line before) has."""
    wanted = fields("social-media", goal)
    if wanted is None:
        return None
    post = next(iter(posts(page, wanted["user"])), [])
    shown = icons(post)
    button = wanted["button"].lower()
    if button in ("reply", "retweet", "like"):
        index = POST_ICONS[button]
        return click(shown[index]) if len(shown) > index else None
    for item, text in zip(post, post[1:]):
        if item.role == "listitem" and item.bid and text.name.lower().startswith(button):
            return click(item)
    return click(shown[3]) if len(shown) > 3 and click(shown[3]) not in history else None


def navigate_tree(goal, page, turn, history):
    """navigate-tree: the item named in the goal once it shows, else the next folder not opened yet (a click on a
    file ends the episode). A folder's item has its expander between it and its name, so in the tree the name's
    bid is not the item's bid + 1, as a file's is."""
    wanted = fields("navigate-tree", goal)
    if wanted is None:
        return None
    target = find(page, wanted["target"], ("StaticText",))
    if target is not None:
        return click(target)
    for item, name in zip(page, page[1:]):
        folder = item.role == "listitem" and item.bid and name.bid and name.role == "StaticText"
        if folder and name.bid != _next_bid(item.bid) and click(name) not in history:
            return click(name)
    return None


def _next_bid(bid: str) -> str | None:
    """The bid BrowserGym gives the element after `bid` (a number one more), or None for a bid of another form."""
    return str(int(bid) + 1) if bid.isdigit() else None


def navigation_strategies(email: Strategy) -> dict[str, Strategy]:
    """This module's strategies by MiniWoB type (`email` is teacher.py's email-inbox strategy, which the
    natural-language forward reuses)."""
    return {
        "multi-orderings": labelled_form,
        "multi-layouts": labelled_form,
        "login-user-popup": login_popup,
        "read-table-2": read_table_2,
        "choose-date-easy": choose_date,
        "click-menu": menu_path,
        "guess-number": guess_number,
        "phone-book": phone_book,
        "email-inbox-forward-nl": forward_nl(email),
        "social-media-some": social_media_some,
        "social-media": social_media,
        "navigate-tree": navigate_tree,
    }
