"""Print, as name==version pins from a lock, the given distributions not installed at the lock's releases and their
requirements (and what those need, in turn) that the installed releases do not meet: what scripts/test-gpu-libs.sh
installs next, and nothing once the environment holds the lock's releases. Standard library and
`packaging` only (pip's resolver would uninstall from .venv, which the GPU-libs venv reads through a site dir)."""

from __future__ import annotations

import importlib.metadata as md
import re
import sys

from packaging.requirements import Requirement


def canonical(name: str) -> str:
    """PEP 503's normal form of a distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def unmet(lock: dict[str, str], roots: list[str]) -> list[str]:
    """The lock's pins for each root not installed at the lock's release, and for every requirement reachable from the
    roots whose installed release does not satisfy it."""
    seen, todo, out = set(), [canonical(r) for r in roots], []
    for root in todo:
        try:
            have = md.version(root)
        except md.PackageNotFoundError:
            have = None
        if have != lock[root]:
            out.append(f"{root}=={lock[root]}")
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            needs = md.requires(name) or []
        except md.PackageNotFoundError:
            continue
        for text in needs:
            req = Requirement(text)
            if req.marker and not req.marker.evaluate({"extra": ""}):
                continue
            dep = canonical(req.name)
            try:
                have = md.version(dep)
            except md.PackageNotFoundError:
                have = None
            if have is None or not req.specifier.contains(have, prereleases=True):
                if dep not in lock:
                    raise SystemExit(f"{name} needs {text}, which the lock does not pin")
                out.append(f"{dep}=={lock[dep]}")
            todo.append(dep)
    return sorted(set(out))


def main() -> None:
    """Read the lock (argv[1]) and print the unmet pins for the roots (argv[2:]) on one line."""
    lock = {}
    for line in open(sys.argv[1]):
        if "==" in line and not line.startswith("#"):
            name, version = line.strip().split("==", 1)
            lock[canonical(name)] = version
    print(" ".join(unmet(lock, sys.argv[2:])))


if __name__ == "__main__":
    main()
