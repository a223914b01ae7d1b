"""Quickmail's seed mailbox: fixed data, so every run of every task starts the same."""
from __future__ import annotations

import copy

USER = {"name": "Alex Morgan", "email": "alex.morgan@example.com"}
LABELS = ["Work", "Personal", "Travel", "Finance"]
NOW = "2024-06-01 09:00"

# id, from name, from address, subject, body, date, read, starred, labels, folder, archived, deleted
_ROWS = [
    ("e1", "Angela White", "angela.white@northwind.com", "Q3 budget review",
     "Hi Alex, can we move the Q3 budget review to Thursday at 2pm? I need one more day to finish the "
     "forecast. Thanks, Angela", "2024-05-31 16:42", False, False, ["Work"], "inbox", False, False),
    ("e2", "Delta Air Lines", "reservations@delta.example.com", "Your flight confirmation: PDX to JFK",
     "Confirmation code K7QX2M. Flight DL 1432 departs Portland at 8:05 AM on June 12 and arrives at "
     "New York JFK at 4:31 PM.", "2024-05-31 11:05", True, False, ["Travel"], "inbox", False, False),
    ("e3", "Priya Shah", "priya.shah@northwind.com", "Design review notes",
     "Here are my notes from the design review. The main open question is whether we ship the new "
     "onboarding flow in July or wait for the August release.", "2024-05-31 09:18", False, False, [], "inbox",
     False, False),
    ("e4", "GitHub", "noreply@github.example.com", "[loraloop] CI failed on main",
     "The workflow 'tests' failed on commit 4f2a9c1. 3 tests failed in test_rollout.py.",
     "2024-05-30 22:47", True, False, [], "inbox", False, False),
    ("e5", "Mom", "mom.morgan@example.com", "Sunday dinner",
     "Are you coming to dinner on Sunday? Dad is making lasagna. Let me know by Friday! Love, Mom",
     "2024-05-30 18:30", False, False, ["Personal"], "inbox", False, False),
    ("e6", "City Library", "notices@library.example.org", "Your hold is ready: Dune",
     "The item you placed on hold, Dune by Frank Herbert, is ready for pickup at the Central branch "
     "until June 9.", "2024-05-30 10:02", True, False, [], "inbox", False, False),
    ("e7", "Marcus Lee", "marcus.lee@northwind.com", "Lunch tomorrow?",
     "Want to grab lunch tomorrow at the taco place around 12:30?", "2024-05-29 15:11", False, False, [],
     "inbox", False, False),
    ("e8", "Bank of Cascadia", "alerts@cascadiabank.example.com", "Your May statement is ready",
     "Your May statement for the account ending in 4471 is ready. Closing balance: $2,814.22.",
     "2024-05-29 07:00", True, False, ["Finance"], "inbox", False, False),
    ("e9", "Shopzon", "orders@shopzon.example.com", "Your Shopzon order o1003 was received",
     "Thanks for your order of 2 × Wireless Mouse. We'll email you when it ships.", "2024-05-29 06:40", True,
     False, [], "inbox", False, False),
    ("e10", "Sofia Garcia", "sofia.garcia@example.com", "Photos from the hike",
     "Here are the photos from Saturday's hike to Multnomah Falls. The one at the bridge is my favourite!",
     "2024-05-28 20:15", True, True, ["Personal"], "inbox", False, False),
    ("e11", "Northwind HR", "hr@northwind.com", "Open enrollment ends Friday",
     "Reminder: benefits open enrollment closes this Friday at 5pm. Review your elections in the portal.",
     "2024-05-28 09:00", False, False, ["Work"], "inbox", False, False),
    ("e12", "Daily Deals", "deals@dailydeals.example.com", "Flash sale: 70% off everything",
     "Today only! Seventy percent off everything in the store. Use code FLASH70 at checkout.",
     "2024-05-27 12:00", True, False, [], "inbox", False, False),
    ("e13", "Angela White", "angela.white@northwind.com", "Offsite agenda",
     "Draft agenda for the team offsite on June 20: morning roadmap session, afternoon hike, dinner at 7.",
     "2024-05-27 10:24", True, False, ["Work"], "inbox", False, False),
    ("e14", "Tom Becker", "tom.becker@example.com", "Borrowed ladder",
     "Hey Alex, can I keep the ladder until next weekend? The gutters took longer than I thought.",
     "2024-05-26 14:03", True, False, [], "inbox", False, False),
    ("e15", "Airbnb", "automated@airbnb.example.com", "Reservation confirmed: Brooklyn loft",
     "Your stay at the Brooklyn loft is confirmed. Check-in June 12 after 3 PM, check-out June 16. Host: Dana.",
     "2024-05-25 19:45", True, False, ["Travel"], "inbox", False, False),
    ("e16", "Priya Shah", "priya.shah@northwind.com", "Onboarding metrics",
     "Activation went from 41% to 47% after the new onboarding emails. Full dashboard on the wiki.",
     "2024-05-24 13:30", True, True, ["Work"], "inbox", False, False),
    ("e17", "Python Weekly", "newsletter@pythonweekly.example.com", "This week in Python",
     "PEP updates, a tour of the new REPL, and ten libraries worth a look.", "2024-05-24 08:00", True, False,
     [], "inbox", False, False),
    ("e18", "Smile Dental", "appointments@smiledental.example.com", "Appointment reminder",
     "This is a reminder of your dental cleaning on June 5 at 9:30 AM. Reply to reschedule.",
     "2024-05-23 09:12", False, False, [], "inbox", False, False),
    ("e19", "Marcus Lee", "marcus.lee@northwind.com", "Fantasy league draft",
     "The draft is set for August 25. Same league, same trash talk.", "2024-05-20 21:09", True, False, [],
     "inbox", True, False),
    ("e20", "Daily Deals", "deals@dailydeals.example.com", "Last chance: free shipping",
     "Free shipping ends tonight at midnight.", "2024-05-19 12:00", True, False, [], "inbox", False, True),
    ("e21", "Alex Morgan", USER["email"], "Re: Offsite agenda",
     "Looks great. Can we start the roadmap session at 9:30 instead of 9?", "2024-05-27 11:02", True, False,
     [], "sent", False, False),
    ("e22", "Alex Morgan", USER["email"], "Slides for Monday",
     "Marcus, here are the slides for Monday's review.", "2024-05-24 17:45", True, False, [], "sent", False,
     False),
]
_RECIPIENTS = {"e21": ["angela.white@northwind.com"], "e22": ["marcus.lee@northwind.com"]}


def _email(row: tuple) -> dict:
    eid, name, address, subject, body, date, read, starred, labels, folder, archived, deleted = row
    return {"id": eid, "from": address, "fromName": name, "to": _RECIPIENTS.get(eid, [USER["email"]]),
            "subject": subject, "body": body, "date": date, "folder": folder, "isRead": read,
            "isStarred": starred, "isArchived": archived, "isDeleted": deleted, "labels": list(labels),
            "inReplyTo": None, "forwardedFrom": None}


_SEED = {"user": USER, "email": {"labels": LABELS, "emails": [_email(row) for row in _ROWS]}, "searches": []}


def seed() -> dict:
    """A fresh deep copy of the mailbox's initial state."""
    return copy.deepcopy(_SEED)


def new_email(state: dict, to: list[str], subject: str, body: str, in_reply_to: str | None,
              forwarded_from: str | None) -> dict:
    """A sent email from the user, numbered after the last email."""
    number = max(int(email["id"][1:]) for email in state["email"]["emails"]) + 1
    return {"id": f"e{number}", "from": USER["email"], "fromName": USER["name"], "to": to, "subject": subject,
            "body": body, "date": NOW, "folder": "sent", "isRead": True, "isStarred": False,
            "isArchived": False, "isDeleted": False, "labels": [], "inReplyTo": in_reply_to,
            "forwardedFrom": forwarded_from}
