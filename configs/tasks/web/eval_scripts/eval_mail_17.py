"""Grades mail-17: a reply to Mom's 'Sunday dinner' email (e5) saying the user is coming.

Run as `python eval_mail_17.py STATE.json` on the `/finish` document; prints SUCCESS or FAILURE.
"""

import json
import sys

YES = ("coming", "be there", "yes", "i'll come", "i will come", "count me in")
NO = ("not coming", "can't come", "cannot come", "won't", "can't make")


def check(state):
    added = list(state.get("differences", {}).get("emails", {}).get("added", {}).values())
    replies = [email for email in added if email.get("inReplyTo") == "e5"]
    if len(added) != 1 or len(replies) != 1:
        return f"expected exactly one reply to e5, found {len(replies)} among {len(added)} sent"
    reply = replies[0]
    if [to.lower() for to in reply.get("to", [])] != ["mom.morgan@example.com"]:
        return f"sent to {reply.get('to')}, not to Mom"
    body = reply.get("body", "").lower()
    if not any(word in body for word in YES) or any(word in body for word in NO):
        return "the reply does not say the user is coming"
    return None


with open(sys.argv[1], encoding="utf-8") as handle:
    problem = check(json.load(handle))
print("FAILURE: " + problem if problem else "SUCCESS")
