"""Adapters in the store: adapters/<name>/<version>/ holding the PEFT files and metadata.json.

Versions are `v1`, `v2`, …: their keys and arithmetic (next, latest, the one before) live here, for
publish, rollback, sync and the `adapters` commands alike. vLLM serves version vK of `name` under
its own served name `<name>-vK` (`served_name`), so a name is never reused for other weights: a
request names exactly the version it is sampled with.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from loraloop.errors import ConfigError
from loraloop.input_rules import identifier_problem
from loraloop.store.backends import Store

PREFIX = "adapters"
REQUIRED = ("adapter_config.json", "adapter_model.safetensors")
EXTRA = ("training_metrics.json", "loss.png")
_VERSION = re.compile(r"^v(\d+)$")
_SERVED = re.compile(r"^(.+)-(v\d+)$")


def version_name(number: int) -> str:
    """The version called `number`: 3 -> 'v3'."""
    return f"v{number}"


def version_number(version: str) -> int | None:
    """The number of a version name ('v3' -> 3), or None when it is not one."""
    match = _VERSION.match(version)
    return int(match.group(1)) if match else None


def served_name(name: str, version: str) -> str:
    """The name vLLM serves a version under: ('myadapter', 'v3') -> 'myadapter-v3'."""
    return f"{name}-{version}"


def parse_served(model: str) -> tuple[str, str] | None:
    """The (name, version) a served name stands for ('myadapter-v3' -> ('myadapter', 'v3')), or None."""
    match = _SERVED.match(model)
    return (match.group(1), match.group(2)) if match else None


def version_key(name: str, version: str, file: str = "") -> str:
    """The store key of a version's folder (adapters/<name>/<version>/), or of one file in it."""
    return f"{PREFIX}/{name}/{version}/{file}"


def check_adapter_dir(path: Path) -> dict:
    """Fail naming the folder and file when it is not a PEFT adapter; return its adapter_config."""
    missing = [f for f in REQUIRED if not (path / f).is_file()]
    if missing:
        raise ConfigError(f"{path} is not a PEFT adapter folder: missing {', '.join(missing)}")
    try:
        return json.loads((path / "adapter_config.json").read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path / 'adapter_config.json'}: not JSON ({exc.msg})") from exc


def versions(store: Store, name: str) -> list[int]:
    """Published version numbers of an adapter, ascending."""
    found = set()
    for key in store.list(f"{PREFIX}/{name}/"):
        parts = key.split("/")
        number = version_number(parts[2]) if len(parts) > 3 else None
        if number is not None:
            found.add(number)
    return sorted(found)


def next_version(store: Store, name: str) -> str:
    """The version a new upload of `name` gets: one past the newest, 'v1' for the first."""
    known = versions(store, name)
    return version_name(known[-1] + 1 if known else 1)


def version_before(known: list[int], current: str | None) -> str | None:
    """The newest of `known` older than `current` (any when current is None), or None: a rollback's target."""
    limit = version_number(current) if current else None
    older = [n for n in known if limit is None or n < limit]
    return version_name(older[-1]) if older else None


def read_metadata(store: Store, name: str, version: str | None = None) -> dict:
    """A version's metadata.json (default: the newest), failing with the versions there are."""
    known = versions(store, name)
    if not known:
        raise ConfigError(f"no adapter named {name!r} in {store.url}")
    version = version or version_name(known[-1])
    if version_number(version) not in known or not store.exists(version_key(name, version, "metadata.json")):
        raise ConfigError(
            f"adapter {name!r} has no version {version!r} in {store.url} "
            f"(versions: {', '.join(map(version_name, known))})"
        )
    return json.loads(store.get_bytes(version_key(name, version, "metadata.json")))


def upload(store: Store, name: str, adapter_dir: Path, metadata: dict) -> str:
    """Copy the adapter and its metadata to the next version; return that version ('v3')."""
    problem = identifier_problem(name, "adapter name")
    if problem:
        raise ConfigError(problem)
    if parse_served(name):
        raise ConfigError(f"adapter name {name!r} must not end in '-v<number>': served names add the version so")
    version = next_version(store, name)
    for file in REQUIRED + EXTRA:
        if (adapter_dir / file).is_file():
            store.put_bytes(version_key(name, version, file), (adapter_dir / file).read_bytes())
    write_metadata(store, name, version, metadata)  # last: its presence marks a complete version
    return version


def write_metadata(store: Store, name: str, version: str, metadata: dict) -> None:
    """Write (or update) a version's metadata.json."""
    store.put_bytes(
        version_key(name, version, "metadata.json"),
        json.dumps({**metadata, "name": name, "version": version}, indent=2).encode(),
    )


def names(store: Store) -> list[str]:
    """Every adapter name in the store."""
    return sorted({key.split("/")[1] for key in store.list(f"{PREFIX}/") if key.count("/") >= 3})


def download(store: Store, name: str, version: str, dest: Path) -> Path:
    """Unpack a published version into dest/<name>/<version>/ (skipped when already there)."""
    target = dest / name / version
    if (target / "metadata.json").is_file():
        return target
    target.mkdir(parents=True, exist_ok=True)
    for file in REQUIRED + EXTRA + ("metadata.json",):
        key = version_key(name, version, file)
        if store.exists(key):
            (target / file).write_bytes(store.get_bytes(key))
    return target


def mark_served(store: Store, name: str, version: str) -> None:
    """Record which version vLLM should serve under `name`, so a restarted vLLM gets it back (sync)."""
    store.put_bytes(f"{PREFIX}/{name}/served.json", json.dumps({"version": version, "at": time.time()}).encode())


def wanted(store: Store, name: str) -> str | None:
    """The version to serve under `name`: the one last published or rolled back to, else the newest complete one."""
    key = f"{PREFIX}/{name}/served.json"
    if store.exists(key):
        return json.loads(store.get_bytes(key))["version"]
    complete = [n for n in versions(store, name) if store.exists(version_key(name, version_name(n), "metadata.json"))]
    return version_name(complete[-1]) if complete else None


def resolve(store: Store, model: str) -> tuple[str, str] | None:
    """The adapter version a rollout's model names: a bare adapter name is the version last published
    (or rolled back to: `wanted`), a served name `<name>-vK` that version; None for any other model
    (a base model, or an adapter the store does not hold)."""
    if identifier_problem(model, "model") is None and versions(store, model):
        version = wanted(store, model)
        if version is None:
            raise ConfigError(f"adapter {model!r} has no complete version in {store.url}: publish it first")
        return model, version
    parsed = parse_served(model)
    if parsed and version_number(parsed[1]) in versions(store, parsed[0]):
        return parsed
    return None
