"""Snapshot one domain and split of tau2-bench's tasks from the installed package into one JSON registry file.

A snapshot freezes the task objects (the package ships them, with the domains' databases and policies),
so that an upgrade of the package cannot change the tasks under a running experiment. Solo mode (no user
simulator) is a property of the snapshot: tau2 supports it for some domains, and for tasks with a ticket.
"""

from __future__ import annotations

from pathlib import Path

from loraloop.errors import ConfigError, TaskFormatError
from loraloop.tasks.base import Registry, snapshot_document, write_document
from loraloop.tasks.tau2.format import parse_tau2_task
from loraloop.tasks.tau2.package import check_domain, tau2_registry, tau2_version

SOURCE = "tau2"
ALL = "base"  # tau2's name for every task of a domain


def splits(domain: str) -> list[str]:
    """The splits tau2 defines for the domain (`base` is all its tasks)."""
    check_domain(domain)
    loader = tau2_registry().get_task_splits_loader(domain)
    return list(loader()) if loader is not None else [ALL]


def snapshot(domain: str, split: str = ALL, solo: bool = False) -> dict:
    """The registry document: tau2's task objects of that domain and split, each validated by tau2.

    In solo mode only the tasks tau2's solo agent can play are kept (a ticket and reference actions); a domain
    without a solo policy fails naming it.
    """
    known = splits(domain)
    if split not in known:
        raise ConfigError(f"tau2 domain {domain!r} has no split {split!r} (known: {', '.join(known)})")
    registry = tau2_registry()
    loader = registry.get_tasks_loader(domain)
    tasks = loader(split) if registry.get_task_splits_loader(domain) is not None else loader()
    if solo:
        try:
            registry.get_env_constructor(domain)(solo_mode=True)
        except ValueError as exc:
            raise ConfigError(f"tau2 domain {domain!r} has no solo mode ({exc})") from exc
        from tau2.agent.llm_agent import LLMSoloAgent

        tasks = [task for task in tasks if LLMSoloAgent.check_valid_task(task)]
    raws = [task.model_dump(mode="json", exclude_none=True) for task in tasks]
    for i, (task, raw) in enumerate(zip(tasks, raws)):  # a snapshot that loads later is the point
        parsed = parse_tau2_task(raw, file=f"tau2 {domain} {split}", number=i, domain=domain, split=split, solo=solo)
        if parsed.tau2_task != task:
            raise TaskFormatError(f"tau2 {domain} task {task.id!r} does not survive a JSON round trip")
    return {
        "source": SOURCE,
        "domain": domain,
        "split": split,
        "solo_mode": solo,
        "tau2_version": tau2_version(),
        "tasks": raws,
    }


def write_snapshot(domain: str, split: str, out: Path, solo: bool = False) -> dict:
    """Write the snapshot to `out` (atomically) and return it."""
    doc = snapshot(domain, split, solo)
    write_document(doc, out)
    return doc


def snapshot_registry(path: Path) -> Registry | None:
    """A snapshot written by `loraloop tasks snapshot --source tau2` as a registry; None for any other path."""
    doc = snapshot_document(path, (SOURCE,))
    if doc is None:
        return None
    if not isinstance(doc.get("tasks"), list):
        raise TaskFormatError(f"{path}: field 'tasks' must be a list")
    domain, split, solo = str(doc.get("domain", "")), str(doc.get("split", "")), doc.get("solo_mode", False)
    if not isinstance(solo, bool):
        raise TaskFormatError(f"{path}: field 'solo_mode' must be true or false, got {solo!r}")
    name = f"tau2-{domain}-{split}" + "-solo" * solo
    return Registry(
        name=name,
        env="tau2",
        tasks=[
            parse_tau2_task(raw, file=str(path), number=i, domain=domain, split=split, solo=solo)
            for i, raw in enumerate(doc["tasks"])
        ],
    )
