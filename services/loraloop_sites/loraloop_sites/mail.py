"""Quickmail, the mail client (similar to Gmail): folders, labels, search, reading and sending under /mail."""

from __future__ import annotations

import re
from collections.abc import Callable

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse

from .mail_data import new_email
from .pages import BadInput, Site
from .protocol import add_protocol_routes, session

KEY = "mail"
HOME = "/mail"
COLLECTIONS = {"emails": ("email", "emails"), "searches": ("searches",)}
FOLDERS = {  # name: (title, membership test)
    "inbox": ("Inbox", lambda e: e["folder"] == "inbox" and not e["isArchived"] and not e["isDeleted"]),
    "starred": ("Starred", lambda e: e["isStarred"] and not e["isDeleted"]),
    "sent": ("Sent", lambda e: e["folder"] == "sent" and not e["isDeleted"]),
    "archive": ("Archive", lambda e: e["isArchived"] and not e["isDeleted"]),
    "trash": ("Trash", lambda e: e["isDeleted"]),
}
NOTICES = {
    "archived": "Conversation archived.",
    "deleted": "Conversation moved to Trash.",
    "unread": "Conversation marked as unread.",
    "sent": "Message sent.",
    "restored": "Moved to Inbox.",
}
ADDRESS = re.compile(r"[^@\s,;]+@[^@\s,;]+\.[^@\s,;]+")

TEMPLATES = {
    "mail.html": """{% extends "layout.html" %}
{% block search %}
<form role="search" action="/mail/search" method="get">
  <label class="sr" for="mail-q">Search mail</label>
  <input type="search" id="mail-q" name="q" value="{{ query|default('') }}" placeholder="Search mail">
  <button type="submit">Search</button>
</form>
{% endblock %}
""",
    "list.html": """{% extends "mail.html" %}
{% block main %}
<aside><h2>Labels</h2>
<ul>{% for label in labels %}<li><a href="/mail/label/{{ label }}">{{ label }}</a></li>{% endfor %}</ul>
</aside>
<section>
<h1>{{ title }}</h1>
{% if emails %}
<table>
<thead><tr><th>{{ "To" if sent else "From" }}</th><th>Subject</th><th>Date</th><th>Status</th></tr></thead>
<tbody>{% for e in emails %}
<tr class="{{ '' if e.isRead else 'unread' }}">
  <td>{{ e.to|join(", ") if sent else e.fromName }}</td>
  <td><a href="/mail/email/{{ e.id }}">{{ e.subject or "(no subject)" }}</a>
    <div class="muted">{{ e.body[:70] }}{% if e.body|length > 70 %}…{% endif %}</div></td>
  <td class="muted">{{ e.date }}</td>
  <td>{{ "Read" if e.isRead else "Unread" }}{% if e.isStarred %}, starred{% endif %}{% for label in e.labels %}, {{ label }}{% endfor %}</td>
</tr>{% endfor %}
</tbody></table>
{% else %}
<p class="muted">No conversations here.</p>
{% endif %}
</section>
{% endblock %}""",  # noqa: E501 - HTML and CSS the site serves: a line broken in the template would change its pages
    "email.html": """{% extends "mail.html" %}
{% block main %}
<h1>{{ email.subject or "(no subject)" }}</h1>
<p><strong>{{ email.fromName }}</strong> &lt;{{ email.from }}&gt;<br>
<span class="muted">To: {{ email.to|join(", ") }} · {{ email.date }}</span></p>
<p>{% for label in email.labels %}
  <form action="/mail/email/{{ email.id }}/unlabel" method="post" style="display: inline">
    <input type="hidden" name="label" value="{{ label }}">
    <span class="status">{{ label }}</span> <button type="submit" aria-label="Remove label {{ label }}">×</button>
  </form>{% endfor %}</p>
<div style="white-space: pre-wrap; padding: 12px 0; border-top: 1px solid #eee">{{ email.body }}</div>
<p>
  <a class="button" href="/mail/compose?reply_to={{ email.id }}">Reply</a>
  <a class="button" href="/mail/compose?forward={{ email.id }}">Forward</a>
</p>
<div style="display: flex; gap: 8px; flex-wrap: wrap">
{% for action, label in actions %}
  <form action="/mail/email/{{ email.id }}/{{ action }}" method="post"><button type="submit">{{ label }}</button></form>
{% endfor %}
  <form action="/mail/email/{{ email.id }}/label" method="post">
    <label for="label" style="display: inline">Label</label>
    <select id="label" name="label">{% for label in labels %}<option>{{ label }}</option>{% endfor %}</select>
    <button type="submit">Apply label</button>
  </form>
</div>
{% endblock %}""",
    "compose.html": """{% extends "mail.html" %}
{% block main %}
<h1>New message</h1>
<form action="/mail/send" method="post">
  <input type="hidden" name="in_reply_to" value="{{ draft.inReplyTo or '' }}">
  <input type="hidden" name="forwarded_from" value="{{ draft.forwardedFrom or '' }}">
  <label for="to">To</label>
  <input type="text" id="to" name="to" value="{{ draft.to }}" style="width: 100%">
  <label for="subject">Subject</label>
  <input type="text" id="subject" name="subject" value="{{ draft.subject }}" style="width: 100%">
  <label for="body">Body</label>
  <textarea id="body" name="body" rows="12" style="width: 100%">{{ draft.body }}</textarea>
  <p><button type="submit">Send</button> <a href="/mail">Discard</a></p>
</form>
{% endblock %}""",
}


def _nav(state: dict) -> list[tuple[str, str]]:
    return [(title, HOME if name == "inbox" else f"{HOME}/folder/{name}") for name, (title, _) in FOLDERS.items()] + [
        ("Compose", f"{HOME}/compose")
    ]


SITE = Site("Quickmail", HOME, "#1a73e8", _nav, TEMPLATES)
router = APIRouter(prefix=HOME)
add_protocol_routes(router, KEY, SITE, COLLECTIONS)


def _newest_first(emails: list[dict]) -> list[dict]:
    return sorted(emails, key=lambda e: (e["date"], int(e["id"][1:])), reverse=True)


def _listing(request: Request, title: str, test: Callable[[dict], bool], **context) -> HTMLResponse:
    with session(request, KEY) as run:
        emails = _newest_first([e for e in run.state["email"]["emails"] if test(e)])
        notice = NOTICES.get(request.query_params.get("notice", ""), "")
        return SITE.render(
            "list.html",
            run.state,
            title=title,
            emails=emails,
            notice=notice,
            labels=run.state["email"]["labels"],
            sent=title == "Sent",
            **context,
        )


@router.get("", response_class=HTMLResponse)
@router.get("/", response_class=HTMLResponse)
def inbox(request: Request) -> HTMLResponse:
    """The inbox, newest first."""
    return folder(request, "inbox")


@router.get("/folder/{name}", response_class=HTMLResponse)
def folder(request: Request, name: str) -> HTMLResponse:
    """One folder: inbox, starred, sent, archive or trash."""
    if name not in FOLDERS:
        raise BadInput(SITE, f"Folder '{name}' does not exist.", status=404)
    with session(request, KEY) as run:
        run.record("view_folder", {"folder": name})
    title, test = FOLDERS[name]
    return _listing(request, title, test)


@router.get("/label/{name}", response_class=HTMLResponse)
def label_view(request: Request, name: str) -> HTMLResponse:
    """Every conversation with one label, outside the Trash."""
    with session(request, KEY) as run:
        if name not in run.state["email"]["labels"]:
            raise BadInput(SITE, f"Label '{name}' does not exist.", status=404)
        run.record("view_label", {"label": name})
    return _listing(request, name, lambda e: name in e["labels"] and not e["isDeleted"])


@router.get("/search", response_class=HTMLResponse)
def search(request: Request, q: str = "") -> HTMLResponse:
    """Conversations outside the Trash holding every word of `q`, recorded in `searches`."""
    words = re.findall(r"\w+", q.lower())

    def matches(e: dict) -> bool:
        """Whether one email holds every searched word and is outside the Trash."""
        text = f"{e['fromName']} {e['from']} {' '.join(e['to'])} {e['subject']} {e['body']}".lower()
        return bool(words) and not e["isDeleted"] and all(word in text for word in words)

    with session(request, KEY) as run:
        results = [e["id"] for e in _newest_first(run.state["email"]["emails"]) if matches(e)]
        entry = {"id": f"s{len(run.state['searches']) + 1}", "query": q, "results": results}
        run.state["searches"].append(entry)
        run.record("search", entry)
    return _listing(request, f'Search results for "{q}"', matches, query=q)


def _email(state: dict, eid: str) -> dict:
    email = next((e for e in state["email"]["emails"] if e["id"] == eid), None)
    if email is None:
        raise BadInput(SITE, f"Email '{eid}' does not exist.", status=404)
    return email


def _actions(email: dict) -> list[tuple[str, str]]:
    actions = []
    if not email["isArchived"] and not email["isDeleted"]:
        actions.append(("archive", "Archive"))
    if not email["isDeleted"]:
        actions.append(("delete", "Delete"))
    if email["isArchived"] or email["isDeleted"]:
        actions.append(("restore", "Move to Inbox"))
    actions.append(("star", "Unstar" if email["isStarred"] else "Star"))
    actions.append(("unread", "Mark as unread"))
    return actions


@router.get("/email/{eid}", response_class=HTMLResponse)
def open_email(request: Request, eid: str) -> HTMLResponse:
    """Read one email, which marks it read."""
    with session(request, KEY) as run:
        email = _email(run.state, eid)
        email["isRead"] = True
        run.record("open_email", {"id": eid, "subject": email["subject"]})
        return SITE.render(
            "email.html",
            run.state,
            title=email["subject"] or "(no subject)",
            email=email,
            actions=_actions(email),
            labels=run.state["email"]["labels"],
        )


def _see_other(path: str) -> RedirectResponse:
    return RedirectResponse(path, status_code=303)


CHANGES = {  # action: (fields it sets, notice shown in the inbox afterwards; None: back to the email)
    "archive": ({"isArchived": True}, "archived"),
    "delete": ({"isDeleted": True}, "deleted"),
    "restore": ({"isArchived": False, "isDeleted": False}, "restored"),
    "unread": ({"isRead": False}, "unread"),
}


@router.post("/email/{eid}/{action}")
async def change_email(request: Request, eid: str, action: str) -> RedirectResponse:
    """Archive, delete, restore, mark unread, star or unstar, label or unlabel one email."""
    form = await request.form()
    with session(request, KEY) as run:
        email = _email(run.state, eid)
        if action in CHANGES:
            fields, notice = CHANGES[action]
            email.update(fields)
            run.record(action, {"id": eid})
            return _see_other(f"{HOME}?notice={notice}")
        if action == "star":
            email["isStarred"] = not email["isStarred"]
            run.record("star" if email["isStarred"] else "unstar", {"id": eid})
        elif action in ("label", "unlabel"):
            label = str(form.get("label", ""))
            if label not in run.state["email"]["labels"]:
                raise BadInput(SITE, f"Label: '{label}' is not one of {', '.join(run.state['email']['labels'])}.")
            if action == "label" and label not in email["labels"]:
                email["labels"].append(label)
            elif action == "unlabel" and label in email["labels"]:
                email["labels"].remove(label)
            run.record(action, {"id": eid, "label": label})
        else:
            raise BadInput(SITE, f"Unknown action '{action}'.", status=404)
    return _see_other(f"{HOME}/email/{eid}")


@router.get("/compose", response_class=HTMLResponse)
def compose(request: Request, to: str = "", reply_to: str = "", forward: str = "") -> HTMLResponse:
    """The compose form, prefilled for a reply (recipient, "Re:" subject) or a forward ("Fwd:", quoted body)."""
    with session(request, KEY) as run:
        draft = {"to": to, "subject": "", "body": "", "inReplyTo": None, "forwardedFrom": None}
        if reply_to:
            original = _email(run.state, reply_to)
            subject = original["subject"]
            draft.update(
                to=original["from"],
                inReplyTo=reply_to,
                subject=subject if subject.startswith("Re: ") else f"Re: {subject}",
            )
        elif forward:
            original = _email(run.state, forward)
            draft.update(
                forwardedFrom=forward,
                subject=f"Fwd: {original['subject']}",
                body=f"---------- Forwarded message ----------\nFrom: {original['fromName']} "
                f"<{original['from']}>\nDate: {original['date']}\nSubject: {original['subject']}"
                f"\n\n{original['body']}",
            )
        run.record("view_compose", {"inReplyTo": draft["inReplyTo"], "forwardedFrom": draft["forwardedFrom"]})
        return SITE.render("compose.html", run.state, title="Compose", draft=draft)


@router.post("/send")
async def send(request: Request) -> RedirectResponse:
    """Send the composed email: it lands in Sent, and in `differences.emails.added`."""
    form = await request.form()
    raw_to = str(form.get("to", "")).strip()
    recipients = [part.strip() for part in re.split(r"[,;]", raw_to) if part.strip()]
    if not recipients:
        raise BadInput(SITE, "To: enter at least one recipient's email address.")
    wrong = [part for part in recipients if not ADDRESS.fullmatch(part)]
    if wrong:
        raise BadInput(SITE, f"To: '{wrong[0]}' is not an email address.")
    with session(request, KEY) as run:
        links = {}
        for field, key in (("in_reply_to", "inReplyTo"), ("forwarded_from", "forwardedFrom")):
            value = str(form.get(field, "")) or None
            links[key] = _email(run.state, value)["id"] if value else None
        email = new_email(
            run.state,
            recipients,
            str(form.get("subject", "")).strip(),
            str(form.get("body", "")),
            links["inReplyTo"],
            links["forwardedFrom"],
        )
        run.state["email"]["emails"].append(email)
        run.record("send_email", {"id": email["id"], "to": recipients, "subject": email["subject"]})
    return _see_other(f"{HOME}/folder/sent?notice=sent")
