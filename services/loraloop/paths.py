"""Where relative paths lead: the current folder first, else the loraloop checkout this package runs from.

`loraloop rollout` run from another folder still finds `configs/experiments.yaml` and
`configs/tasks/os`, and the default store and model folders stay in the checkout's `volumes/`
instead of appearing wherever the command was typed. An installed wheel has no checkout: its
relative paths are the current folder's, as usual.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from loraloop.errors import ConfigError, LoraloopError


@lru_cache(maxsize=1)
def project_root() -> Path | None:
    """The checkout holding this package (services/loraloop) and configs/, or None for an installed wheel."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "configs" / "experiments.yaml").is_file() else None


def in_project(relative: str) -> Path:
    """A default location under the checkout (absolute), or relative to the current folder without one."""
    root = project_root()
    return root / relative if root is not None else Path(relative)


def places(path: str | Path) -> list[Path]:
    """Where a path may lead, in the order `locate` looks: itself when absolute, else from the current folder,
    then under the checkout."""
    path = Path(path)
    if path.is_absolute():
        return [path]
    root = project_root()
    return [Path.cwd() / path] + ([root / path] if root is not None else [])


def locate(path: str | Path, what: str, error: type[LoraloopError] = ConfigError) -> Path:
    """An existing file or folder: as given from the current folder, else under the checkout.

    Fails with `error`, naming `what` and every place looked in, when neither has it.
    """
    path = Path(path)
    if path.is_absolute() or path.exists():
        return path
    tried = places(path)
    found = next((place for place in tried[1:] if place.exists()), None)
    if found is not None:
        return found
    raise error(f"{what} {path} does not exist (looked in {' and '.join(map(str, tried))})")
