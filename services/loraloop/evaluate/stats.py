"""The statistics an evaluation reports: intervals for a success rate, pass@k and pass^k over repeated
attempts, and a paired test of two modes on the same tasks. Pure functions on counts, no sampling."""

from __future__ import annotations

import math

Z95 = 1.959963984540054  # the standard normal's 97.5% quantile: two-sided 95%


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a success rate (95% by default): honest near 0% and 100% and for small n,
    where the normal approximation gives impossible bounds. (0, 1) when n is 0.

    The bounds hold the point estimate `successes / n` exactly, in floats (`lo <= k/n <= hi`): rounding
    alone puts the formula's upper bound at 10/10 to 0.9999999999999999 and its lower one at 0/3 to 5.6e-17,
    which would draw a negative error bar. At 0 and n the bound is exactly 0 and 1, as the algebra says."""
    if not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    low = 0.0 if successes == 0 else min(p, max(0.0, centre - half))
    high = 1.0 if successes == n else max(p, min(1.0, centre + half))
    return low, high


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of k attempts drawn from a task's n (c of them solved) succeeds: the
    unbiased estimator 1 - C(n-c, k) / C(n, k) (Chen et al., 2021)."""
    _check(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Chance that all of k attempts drawn from a task's n (c solved) succeed, C(c, k) / C(n, k): tau-bench's
    pass^k, the reliability measure (it falls as k grows unless the agent always solves the task)."""
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


def mcnemar(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value for paired outcomes: `only_a` pairs solved by A and not B, `only_b`
    the reverse (pairs both or neither solved carry no information). 1.0 when there are no discordant pairs."""
    discordant = only_a + only_b
    if discordant == 0:
        return 1.0
    tail = sum(math.comb(discordant, i) for i in range(min(only_a, only_b) + 1)) / 2**discordant
    return min(1.0, 2 * tail)
