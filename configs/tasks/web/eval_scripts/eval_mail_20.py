"""Grades mail-20: the Daily Deals inbox email (e12) deleted, the library email (e6) archived, nothing else moved.

Run as `python eval_mail_20.py STATE.json` on the `/finish` document; prints SUCCESS or FAILURE.
"""

import json
import sys

WANT = {"e12": {"isDeleted": True}, "e6": {"isArchived": True}}
MOVES = ("isDeleted", "isArchived")


def check(state):
    final = {email["id"]: email for email in state.get("finalstate", {}).get("email", {}).get("emails", [])}
    for eid, fields in WANT.items():
        for field, value in fields.items():
            if final.get(eid, {}).get(field) is not value:
                return f"{eid}.{field} is {final.get(eid, {}).get(field)}, expected {value}"
    if final.get("e12", {}).get("isArchived"):
        return "the Daily Deals email was archived, not deleted"
    updated = state.get("differences", {}).get("emails", {}).get("updated", {})
    for eid, fields in updated.items():
        if eid not in WANT and any(field in fields for field in MOVES):
            return f"{eid} was moved too"
    return None


with open(sys.argv[1], encoding="utf-8") as handle:
    problem = check(json.load(handle))
print("FAILURE: " + problem if problem else "SUCCESS")
