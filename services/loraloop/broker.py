"""What every user of the broker (Redis) shares: how long to wait out its restart, and its URL fit to show.

The job book (service/), the Verified Action Cache (agents/), the Task Server's and the gateway's episode states
all use these; they live here, below every stage, so that none of those imports another sideways.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

BROKER_OUTAGE_S = 120  # how long workers retry the book (with backoff) while Redis restarts


def without_credentials(url: str) -> str:
    """A URL fit to show: user and password dropped."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return urlunsplit(parts._replace(netloc=host + (f":{parts.port}" if parts.port else "")))
