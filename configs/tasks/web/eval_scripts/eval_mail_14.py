"""Grades mail-14: the Delta confirmation code K7QX2M emailed to Mom with the subject 'Flight code'.

Run as `python eval_mail_14.py STATE.json` on the `/finish` document; prints SUCCESS or FAILURE.
"""

import json
import sys


def check(state):
    emails = state.get("initialfinaldiff", {}).get("added", {}).get("email", {}).get("emails", {})
    sent = [email for email in emails.values() if email.get("folder") == "sent"]
    if len(sent) != 1:
        return f"expected one sent email, found {len(sent)}"
    email = sent[0]
    if "mom.morgan@example.com" not in [to.lower() for to in email.get("to", [])]:
        return f"sent to {email.get('to')}, not to Mom"
    if email.get("subject", "").strip().lower() != "flight code":
        return f"subject is {email.get('subject')!r}"
    if "K7QX2M" not in email.get("body", "").upper():
        return "the body lacks the confirmation code K7QX2M"
    return None


with open(sys.argv[1], encoding="utf-8") as handle:
    problem = check(json.load(handle))
print("FAILURE: " + problem if problem else "SUCCESS")
