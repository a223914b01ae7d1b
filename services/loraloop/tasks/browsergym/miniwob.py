"""MiniWoB++ as a BrowserGym registry: every task type browsergym-miniwob registers, its seeds split in two, and the
types trained on listed in `train_types.txt` (at most 60; every other type is held out).

    PYTHONPATH=services python -m loraloop.tasks.browsergym.miniwob configs/tasks/miniwob

writes the registry's task files from the installed package and the list: `train.jsonl` (the trained types' train
seeds), `heldout_seeds.jsonl` (their held-out seeds) and `heldout_types.jsonl` (the other types' held-out seeds;
their train seeds are never used). tests/unit/test_browsergym_tasks.py checks the committed files are what this
writes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from loraloop.errors import TaskFormatError
from loraloop.tasks.base import read_id_list
from loraloop.tasks.browsergym.format import check_task_id, registered

BENCHMARK = "miniwob"
TRAIN_SEEDS = (0, 49)  # first and last, per type
HELDOUT_SEEDS = (1000, 1019)
MAX_TRAIN_TYPES = 60
FILES = {"train": "train.jsonl", "heldout-seed": "heldout_seeds.jsonl", "heldout-type": "heldout_types.jsonl"}


def train_types(path: Path) -> list[str]:
    """The task types trained on (`miniwob.<type>` a line); fails naming the file and line of an unknown or
    repeated type, or a list longer than MAX_TRAIN_TYPES."""
    listed = read_id_list(path)
    for task_id, (line, _) in listed.items():
        check_task_id(task_id, f"{path}: line {line}")
    if len(listed) > MAX_TRAIN_TYPES:
        raise TaskFormatError(f"{path}: {len(listed)} task types listed, at most {MAX_TRAIN_TYPES} are trained on")
    return list(listed)


def task_files(types_file: Path) -> dict[str, str]:
    """The text of each task file (FILES) for the installed MiniWoB tasks and the list of trained types."""
    trained = train_types(types_file)
    others = sorted(set(registered(BENCHMARK)) - set(trained))

    def lines(ids: list[str], seeds: tuple[int, int]) -> str:
        return "".join(json.dumps({"task": task_id, "seeds": list(seeds)}) + "\n" for task_id in ids)

    return {
        FILES["train"]: lines(trained, TRAIN_SEEDS),
        FILES["heldout-seed"]: lines(trained, HELDOUT_SEEDS),
        FILES["heldout-type"]: lines(others, HELDOUT_SEEDS),
    }


def write_registry(folder: Path) -> None:
    """Write the task files into `folder` (which holds registry.yaml and train_types.txt)."""
    for name, text in task_files(folder / "train_types.txt").items():
        (folder / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write_registry(Path(sys.argv[1] if len(sys.argv) > 1 else "configs/tasks/miniwob"))
