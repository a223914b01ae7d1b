"""Grades mail-23: every unread email from Angela White, Priya Shah and Marcus Lee (e1, e3, e7) is now read.

Run as `python eval_mail_23.py STATE.json` on the `/finish` document; prints SUCCESS or FAILURE.
"""

import json
import sys

SENDERS = {"angela.white@northwind.com", "priya.shah@northwind.com", "marcus.lee@northwind.com"}


def check(state):
    initial = state.get("initialstate", {}).get("email", {}).get("emails", [])
    final = {email["id"]: email for email in state.get("finalstate", {}).get("email", {}).get("emails", [])}
    targets = [email["id"] for email in initial if email["from"] in SENDERS and not email["isRead"]]
    unread = [eid for eid in targets if not final.get(eid, {}).get("isRead")]
    if not targets or unread:
        return f"still unread: {unread}"
    diff = state.get("differences", {}).get("emails", {})
    if diff.get("added") or diff.get("deleted"):
        return "emails were sent or removed"
    for eid, fields in diff.get("updated", {}).items():
        if set(fields) - {"isRead"}:
            return f"{eid} changed beyond being read: {sorted(fields)}"
    return None


with open(sys.argv[1], encoding="utf-8") as handle:
    problem = check(json.load(handle))
print("FAILURE: " + problem if problem else "SUCCESS")
