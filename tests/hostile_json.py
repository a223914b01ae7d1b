"""Hostile JSON for every app's tests: a Hypothesis strategy of request bodies a hostile client could send, and the
checks every answer to one must pass (no 5xx, no secret or host path in it, nothing left allocated).

A body is raw bytes, not a Python value, because what makes it hostile is how it is written:

- nesting deeper than input_rules.MAX_JSON_DEPTH (33 to 3,000 levels), objects and arrays thousands wide;
- numbers: integers with hundreds of digits, 1e308 and 1e999 (past a float), -0.0, and NaN, Infinity and -Infinity
  written raw (Python's parser takes them, strict JSON does not);
- strings: lone surrogates (as `\\ud800` escapes, or as the raw bytes UTF-8 forbids), NUL and control characters,
  right-to-left overrides, path-like text (`../`, `/etc/passwd`), and 100,000 characters in one string.

`hostile_bodies(base)` puts one hostile value into a valid body (in place of a field, in a new field, or as the whole
body), so each app's validation is met past its first check as well as at it.
"""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from loraloop.input_rules import MAX_JSON_DEPTH


@dataclass(frozen=True)
class Raw:
    """JSON text written as it is: a number Python's json would write otherwise (NaN, 1e999) or not at all."""

    text: str


@dataclass(frozen=True)
class Deep:
    """`inner` nested `levels` deep in arrays or objects, written without recursion (so thousands of levels are
    cheap to write and no encoder overflows)."""

    levels: int
    inner: Any
    objects: bool


ODD_NUMBERS = st.one_of(
    st.sampled_from(
        [
            Raw("NaN"),
            Raw("Infinity"),
            Raw("-Infinity"),
            Raw("1e308"),
            Raw("-1e308"),
            Raw("1e999"),
            Raw("-0.0"),
            Raw("-0"),
            Raw("4.9e-324"),
            Raw("1E+2"),
            2**63,
            -(2**63) - 1,
            2**64,
            10**30,
        ]
    ),
    st.integers(min_value=20, max_value=400).map(lambda digits: Raw("9" * digits)),  # an int past any fixed width
    st.floats(allow_nan=False, allow_infinity=False),
)
ODD_CHARACTERS = st.sampled_from(
    [
        "\ud800",
        "\udfff",
        "\udc00x\ud83d",
        "\x00",
        "\x1b[2J",
        "\x7f",
        "\u202e",
        "\u2066",
        "\ufeff",
        "\uffff",
        "../",
        "..",
        ".",
        "/etc/passwd",
        "%00",
        "\\",
        '"',
        "{",
        "[",
        "$(id)",
        "<script>",
        "\u0301",
        "\U0001f600",
    ]
)
ODD_STRINGS = st.one_of(
    st.lists(st.one_of(ODD_CHARACTERS, st.text(max_size=8)), min_size=1, max_size=8).map("".join),
    st.tuples(ODD_CHARACTERS, st.integers(min_value=1_000, max_value=100_000)).map(lambda pair: pair[0] * pair[1]),
    st.text(alphabet=st.characters(codec="utf-8", categories=("Cc", "Cf", "Zl", "Zp", "Mn")), max_size=20),
)
LEAVES = st.one_of(ODD_NUMBERS, ODD_STRINGS, st.none(), st.booleans(), st.just({}), st.just([]))
TREES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.one_of(ODD_STRINGS, st.text(max_size=6)), inner, max_size=4)
    ),
    max_leaves=12,
)
DEEP = st.builds(
    Deep, levels=st.integers(min_value=MAX_JSON_DEPTH + 1, max_value=3_000), inner=LEAVES, objects=st.booleans()
)
WIDE = st.one_of(
    st.integers(min_value=1_000, max_value=20_000).map(lambda n: list(range(n))),
    st.integers(min_value=1_000, max_value=10_000).map(lambda n: {f"k{i}": i for i in range(n)}),
    st.tuples(LEAVES, st.integers(min_value=100, max_value=2_000)).map(lambda pair: [pair[0]] * pair[1]),
)
HOSTILE_VALUES = st.one_of(TREES, DEEP, WIDE)  # one hostile value, to put anywhere in a body


def write(value: Any, ascii_only: bool = True) -> str:
    """`value` as JSON text: Raw as it is, Deep without recursion, other floats as Python writes them (-0.0, NaN
    raw). With `ascii_only` a lone surrogate is a `\\udXXX` escape; without it, the character itself."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, Deep):
        opening, closing = ('{"d": ', "}") if value.objects else ("[", "]")
        return opening * value.levels + write(value.inner, ascii_only) + closing * value.levels
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{write(str(k), ascii_only)}: {write(v, ascii_only)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(write(item, ascii_only) for item in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


def encode(value: Any, ascii_only: bool) -> bytes:
    """JSON text as bytes; without `ascii_only`, a lone surrogate becomes the raw bytes UTF-8 forbids."""
    return write(value, ascii_only).encode("utf-8", "surrogatepass")


def hostile_bodies(base: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """Request bodies around a valid `base`: a hostile value in place of one of its fields (a nested field as
    `a.b`), in a field of its own, or as the whole body; written with escapes or raw bytes."""
    fields = sorted(dotted(base)) + ["extra"]

    def place(where: str | None, value: Any) -> Any:
        if where is None:
            return value
        body = json.loads(json.dumps(base))
        *parents, last = where.split(".")
        target = body
        for name in parents:
            target = target[name]
        target[last] = value
        return body

    return st.builds(
        lambda where, value, ascii_only: encode(place(where, value), ascii_only),
        st.one_of(st.none(), st.sampled_from(fields)),
        HOSTILE_VALUES,
        st.booleans(),
    )


def dotted(body: dict[str, Any], prefix: str = "") -> list[str]:
    """The paths of every field of a body, nested ones as `a.b` (lists are leaves)."""
    paths = []
    for key, value in body.items():
        paths.append(prefix + key)
        if isinstance(value, dict):
            paths += dotted(value, f"{prefix}{key}.")
    return paths


def assert_sound(reply, secrets: list[str], route: str, body: bytes, allowed_5xx: tuple[str, ...] = ()) -> None:
    """An answer to a hostile body: below 500 (or a 5xx whose text holds one of `allowed_5xx`, a dependency the test
    took down on purpose), and none of `secrets` (tokens, the store's folder, the checkout's path) in its text, a
    success's included (a job status and the run list name the store without its folder)."""
    shown = body[:200]
    assert reply.status_code < 500 or any(text in reply.text for text in allowed_5xx), (
        route,
        reply.status_code,
        reply.text[:300],
        shown,
    )
    for secret in secrets:
        assert secret not in reply.text, (route, reply.status_code, "leaks", secret, reply.text[:300], shown)


def my_containers() -> int:
    """How many environment containers (running or not) this process started, by the creator label the shell env
    puts on each (a Redis-mode Task Server's episode containers are owned by the host, not by this process): the
    tests of another worker or checkout do not count."""
    from loraloop.envs.shell.docker import CREATOR_LABEL, owner_id

    listed = subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label={CREATOR_LABEL}={owner_id()}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return len(listed.stdout.split())


def store_objects(store) -> list[str]:
    """Every object of a store, sorted (a file store's partial writes left out, as its readers do)."""
    return sorted(store.list(""))
