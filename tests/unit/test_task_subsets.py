"""--subset terms with `,`-separated alternatives: the demo trains on several task families at once."""

import pytest

from loraloop.errors import TaskFormatError
from loraloop.task_registry import load_registry

FAMILIES = ("count-ext", "grep-count", "config-value")


def test_alternatives_select_the_union_of_families_within_a_split():
    registry = load_registry("configs/tasks/os")
    subset = "test+" + ",".join(f"family:{name}" for name in FAMILIES)
    chosen = registry.select(subset)
    per_family = {name: registry.select(f"test+family:{name}") for name in FAMILIES}
    assert all(per_family.values()) and [t.index for t in chosen] == [
        t.index for t in registry.tasks if any(t in tasks for tasks in per_family.values())
    ]
    assert {t.split for t in chosen} == {"test"}


def test_alternatives_that_match_nothing_are_refused_naming_the_subset():
    with pytest.raises(TaskFormatError, match="subset 'train\\+family:none,family:nothing' matches no task"):
        load_registry("configs/tasks/os").select("train+family:none,family:nothing")
