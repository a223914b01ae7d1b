"""The rules every input from outside meets, in one place: the jobs API, the Task Server, the gateway, the viewer
and the CLI all check identifiers, JSON, numbers, store keys and outbound URLs here.

- Identifiers (a run id, an experiment, an adapter name) become folder and object names: letters, digits, '.',
  '_' and '-', at most 128 characters, starting with a letter or digit (so never `.`, `..`, a hidden name or
  something a shell or the CLI reads as a flag), no NUL.
- JSON bodies are at most MAX_JSON_DEPTH levels deep, checked on the raw bytes before any parser or validator
  recurses (their size is each app's body cap, http_guards.BodyLimit).
- Seeds fit every consumer: Python's and numpy's generators and vLLM's int64 `seed`, with room for the per-rollout
  offset (task_index * 1000 + attempt); rewards are finite and bounded, so a sum of them is too.
- Store keys the viewer reads are names the operating system takes (no NUL, parts of at most 255 bytes).
- Outbound URLs are the operator's: a client picks only among those the settings allow.

Every refusal names the field and the rule, never a host path.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field

IDENTIFIER_RULE = "letters, digits, '.', '_' and '-', 1 to 128 characters, starting with a letter or digit"
_IDENTIFIER = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
MAX_JSON_DEPTH = 32  # far past any request's real nesting (a tau2 config: 3), far below any parser's recursion limit
MAX_SEED = 2**32 - 1  # numpy's RandomState takes 0..2**32-1; plus any rollout offset, still inside vLLM's int64
MAX_REWARD = 1e6  # |reward|: a sum of any number of steps' rewards stays a finite float
MAX_KEY_PART_BYTES = 255  # the longest file name Linux file systems (ext4, xfs, btrfs) take
MAX_KEY_BYTES = 1024  # S3's longest object key
MODEL_NAME = re.compile(r"[^\s\x00-\x1f]{1,256}")  # a served model name (vLLM's --served-model-name, an adapter)
_JSON_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')  # a whole string (skipped), or a bracket


def identifier_problem(value: str, field: str) -> str | None:
    """Why `value` cannot be the identifier `field` (a sentence naming both and the rule), or None when it can."""
    if _IDENTIFIER.fullmatch(value):
        return None
    shown = value if len(value) <= 64 else f"{value[:64]}… ({len(value)} characters)"
    return f"{field} {shown!r} is not an identifier ({IDENTIFIER_RULE})"


def check_identifier(value: str, field: str) -> str:
    """`value` when it is a valid identifier, else a ValueError naming the field and the rule (pydantic turns it into
    a 422 naming the field; the CLI and services re-raise it as their own error)."""
    problem = identifier_problem(value, field)
    if problem:
        raise ValueError(problem)
    return value


def _identifier(value: str) -> str:
    return check_identifier(value, "value")


Identifier = Annotated[str, AfterValidator(_identifier)]  # a request model's run id, experiment or adapter name
Seed = Annotated[int, Field(ge=0, le=MAX_SEED)]
Reward = Annotated[float, Field(ge=-MAX_REWARD, le=MAX_REWARD, allow_inf_nan=False)]
PathText = Annotated[str, Field(pattern=r"^[^\x00-\x1f\x7f]*$")]  # a file or folder name: no NUL, no control


def json_depth_problem(body: bytes, limit: int = MAX_JSON_DEPTH) -> str | None:
    """Where a JSON text nests deeper than `limit` levels, as a sentence; else None. It reads the raw bytes without
    recursion (strings skipped whole), so the answer comes before any parser or validator could overflow."""
    depth = 0
    for token in _JSON_TOKENS.finditer(body):
        bracket = token.group()[0]
        if bracket in b"[{":
            depth += 1
            if depth > limit:
                return f"body: JSON nested more than {limit} levels deep (the limit for every request)"
        elif bracket in b"]}":
            depth -= 1
    return None


def store_key_problem(key: str, field: str = "key") -> str | None:
    """Why a store key cannot name a file (NUL or control characters, a part over 255 bytes, more than 1024 bytes
    in all), as a sentence naming the field and the rule; else None."""
    if re.search(r"[\x00-\x1f\x7f]", key):
        return f"{field}: a store key holds no NUL or control characters"
    size = len(key.encode("utf-8", "surrogatepass"))
    if size > MAX_KEY_BYTES:
        return f"{field}: a store key is at most {MAX_KEY_BYTES} bytes, got {size}"
    if any(len(part.encode("utf-8", "surrogatepass")) > MAX_KEY_PART_BYTES for part in key.split("/")):
        return f"{field}: each '/'-separated part of a store key is at most {MAX_KEY_PART_BYTES} bytes"
    return None


def same_url(a: str, b: str) -> bool:
    """True when two URLs name the same endpoint (a trailing '/' aside)."""
    return a.rstrip("/") == b.rstrip("/")


def url_list(setting: str) -> list[str]:
    """A comma-separated URL setting as its URLs."""
    return [url.strip() for url in setting.split(",") if url.strip()]
