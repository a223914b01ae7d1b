"""Grades mail-7: one email to Angela White confirming Thursday at 2pm for the Q3 budget review.

Run as `python eval_mail_7.py STATE.json` on the `/finish` document; prints SUCCESS or FAILURE.
"""

import json
import re
import sys


def check(state):
    added = list(state.get("differences", {}).get("emails", {}).get("added", {}).values())
    if len(added) != 1:
        return f"expected one sent email, found {len(added)}"
    email = added[0]
    if [to.lower() for to in email.get("to", [])] != ["angela.white@northwind.com"]:
        return f"sent to {email.get('to')}, not only to Angela White"
    text = f"{email.get('subject', '')} {email.get('body', '')}".lower()
    if "thursday" not in text or not re.search(r"\b2\s*(pm|p\.m\.|:00)", text):
        return "the email does not confirm Thursday at 2pm"
    if "budget" not in text:
        return "the email does not mention the budget review"
    return None


with open(sys.argv[1], encoding="utf-8") as handle:
    problem = check(json.load(handle))
print("FAILURE: " + problem if problem else "SUCCESS")
