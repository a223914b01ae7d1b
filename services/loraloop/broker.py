"""What every user of the broker (Redis) shares: how long to wait out its restart (its URL fit to show is
errors.without_credentials, which the store uses too).

The job book (service/), the Verified Action Cache (agents/), the Task Server's and the gateway's episode states
all use these; they live here, below every stage, so that none of those imports another sideways.
"""

from __future__ import annotations

BROKER_OUTAGE_S = 120  # how long workers retry the book (with backoff) while Redis restarts


def is_redis(url: str) -> bool:
    """True for a Redis URL (redis:// or rediss://): state shared through it outlives this process."""
    return url.startswith(("redis://", "rediss://"))
