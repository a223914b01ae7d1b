"""Adapters in the store: adapters/<name>/<version>/ holding the PEFT files and metadata.json."""
from __future__ import annotations

import json
import re
import time
from pathlib import Path

from loraloop.errors import ConfigError
from loraloop.store.backends import Store

PREFIX = "adapters"
REQUIRED = ("adapter_config.json", "adapter_model.safetensors")
EXTRA = ("training_metrics.json", "loss.png")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


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
        match = re.match(rf"{PREFIX}/{re.escape(name)}/v(\d+)/", key)
        if match:
            found.add(int(match.group(1)))
    return sorted(found)


def upload(store: Store, name: str, adapter_dir: Path, metadata: dict) -> str:
    """Copy the adapter and its metadata to the next version; return that version ('v3')."""
    if not _NAME.match(name):
        raise ConfigError(f"adapter name {name!r} must be letters, digits, '.', '_' or '-'")
    existing = versions(store, name)
    version = f"v{(existing[-1] + 1) if existing else 1}"
    base = f"{PREFIX}/{name}/{version}"
    for file in REQUIRED + EXTRA:
        if (adapter_dir / file).is_file():
            store.put_bytes(f"{base}/{file}", (adapter_dir / file).read_bytes())
    write_metadata(store, name, version, metadata)  # last: its presence marks a complete version
    return version


def write_metadata(store: Store, name: str, version: str, metadata: dict) -> None:
    """Write (or update) a version's metadata.json."""
    store.put_bytes(f"{PREFIX}/{name}/{version}/metadata.json",
                    json.dumps({**metadata, "name": name, "version": version}, indent=2).encode())


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
        key = f"{PREFIX}/{name}/{version}/{file}"
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
    complete = [n for n in versions(store, name) if store.exists(f"{PREFIX}/{name}/v{n}/metadata.json")]
    return f"v{complete[-1]}" if complete else None
