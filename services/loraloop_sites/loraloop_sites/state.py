"""Per-run state of the task websites, and REAL's two diffs of it.

Every (site, run) pair holds a JSON-able dict: `/config` resets it to a fresh copy of the site's seed,
the pages change it, `/finish` reports it. Lists of dicts with an `id` are collections, diffed by id.

Shop state (site "shop"):
  user      {name, email, address {fullName, street, city, zip, country}}
  cart      {items: [{id (product id), name, price, quantity}]}
  orders    [{id, date, items [{id, name, price, quantity}], shipping {fullName, street, city, zip, country},
              speed (standard|express|overnight), status (placed|shipped|delivered|cancelled),
              subtotal, shippingCost, total}]
  searches  [{id, query, sort, results (ids of the products found, in order)}]
  viewed    [{id, productId, name}]
Mail state (site "mail"):
  user      {name, email}
  email     {labels: [names], emails: [{id, from, fromName, to [addresses], subject, body, date,
              folder (inbox|sent), isRead, isStarred, isArchived, isDeleted (in Trash), labels [names],
              inReplyTo (id or null), forwardedFrom (id or null)}]}
  searches  [{id, query, results (ids)}]

`differences` has one entry per collection: shop `cart` (cart.items), `orders`, `searches`, `viewed`;
mail `emails` (email.emails), `searches`. Each is {"added": {"0": item, ...}, "updated": {id: {field: new}},
"deleted": {id: item}}. `initialfinaldiff` is {"added", "updated", "deleted"}, each nested by path, with
collections keyed by id: `initialfinaldiff.updated.email.emails.e3.isRead`.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

Json = Any


@dataclass
class Run:
    """One run of one site: its initial state, its current state and what the user did."""

    task_id: str
    initial: dict
    state: dict
    actions: list[dict] = field(default_factory=list)

    def record(self, kind: str, payload: dict) -> None:
        """Append to the action history, which tasks grade on for page views and searches."""
        self.actions.append({"type": kind, "payload": copy.deepcopy(payload)})

    def report(self, collections: dict[str, tuple[str, ...]]) -> dict:
        """The `/finish` document: both states, both diffs and the action history (a deep copy)."""
        return copy.deepcopy(
            {
                "initialstate": self.initial,
                "finalstate": self.state,
                "differences": differences(self.initial, self.state, collections),
                "initialfinaldiff": initial_final_diff(self.initial, self.state),
                "actionhistory": self.actions,
            }
        )


class RunStates:
    """The runs of all sites in memory, keyed by (site, run id), behind one lock (routes run in threads)."""

    def __init__(self, seeds: dict[str, Callable[[], dict]]) -> None:
        self._seeds = seeds
        self._runs: dict[tuple[str, str], Run] = {}
        self._lock = threading.RLock()

    def _fresh(self, site: str, task_id: str) -> Run:
        initial = self._seeds[site]()
        return Run(task_id=task_id, initial=initial, state=copy.deepcopy(initial))

    def reset(self, site: str, run_id: str, task_id: str = "") -> None:
        """Start run `run_id` of `site` over from the seed (what REAL's `/config` does)."""
        with self._lock:
            self._runs[(site, run_id)] = self._fresh(site, task_id)

    @contextmanager
    def edit(self, site: str, run_id: str) -> Iterator[Run]:
        """Hold the lock and yield the run, creating it from the seed if no `/config` came first."""
        with self._lock:
            run = self._runs.get((site, run_id))
            if run is None:
                run = self._runs[(site, run_id)] = self._fresh(site, "")
            yield run

    def report(self, site: str, run_id: str, collections: dict[str, tuple[str, ...]]) -> tuple[str, dict] | None:
        """(task id, `/finish` document) of a run, or None for a run nobody configured or visited."""
        with self._lock:
            run = self._runs.get((site, run_id))
            return None if run is None else (run.task_id, run.report(collections))


def _at(state: dict, path: tuple[str, ...]) -> list:
    for key in path:
        state = state.get(key, {}) if isinstance(state, dict) else {}
    return state if isinstance(state, list) else []


def collection_diff(before: list[dict], after: list[dict]) -> dict:
    """REAL's per-collection diff: added items numbered in order, updated fields and deleted items by id."""
    old = {str(item["id"]): item for item in before}
    new = {str(item["id"]): item for item in after}
    added = [item for key, item in new.items() if key not in old]
    updated = {}
    for key, item in new.items():
        if key in old:
            changes = {name: value for name, value in item.items() if old[key].get(name) != value}
            if changes:
                updated[key] = changes
    return {
        "added": {str(i): item for i, item in enumerate(added)},
        "updated": updated,
        "deleted": {key: item for key, item in old.items() if key not in new},
    }


def differences(initial: dict, final: dict, collections: dict[str, tuple[str, ...]]) -> dict:
    """`collection_diff` of every named collection, found in both states at its path."""
    return {name: collection_diff(_at(initial, path), _at(final, path)) for name, path in collections.items()}


def _keyed(value: Json) -> dict | None:
    if isinstance(value, dict):
        return value
    if isinstance(value, list) and all(isinstance(item, dict) and "id" in item for item in value):
        return {str(item["id"]): item for item in value}
    return None


def _put(tree: dict, path: list[str], value: Json) -> None:
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    tree[path[-1]] = value


def _walk(old: Json, new: Json, path: list[str], result: dict) -> None:
    a, b = _keyed(old), _keyed(new)
    if a is None or b is None:
        if old != new:
            _put(result["updated"], path, new)
        return
    for key, value in b.items():
        if key not in a:
            _put(result["added"], path + [key], value)
        else:
            _walk(a[key], value, path + [key], result)
    for key, value in a.items():
        if key not in b:
            _put(result["deleted"], path + [key], value)


def initial_final_diff(initial: dict, final: dict) -> dict:
    """REAL's whole-state diff: {"added", "updated", "deleted"}, each nested by path, collections by id."""
    result: dict = {"added": {}, "updated": {}, "deleted": {}}
    _walk(initial, final, [], result)
    return result
