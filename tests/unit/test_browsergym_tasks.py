"""The browsergym kind's task side: MiniWoB++'s registry (every type, the seed split, the trained types), the task
line's checks, the kind's registration, and the scripted solver's reading of an observation."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from loraloop.envs.browsergym.teacher import SOLVED, Node, goal_of, nodes, solve
from loraloop.envs.web.observe import flatten_axtree
from loraloop.errors import ConfigError
from loraloop.kinds.registry import env_kind, kind_of_raw
from loraloop.task_registry import load_registry
from loraloop.tasks.base import TaskContext
from loraloop.tasks.browsergym.format import parse_task, registered, task_entrypoint
from loraloop.tasks.browsergym.miniwob import HELDOUT_SEEDS, MAX_TRAIN_TYPES, TRAIN_SEEDS, task_files, train_types
from tests.helpers import ROOT

FOLDER = ROOT / "configs" / "tasks" / "miniwob"
NONDETERMINISTIC = {"click-pie", "click-pie-nodelay", "terminal", "visual-addition"}


def test_every_miniwob_type_is_registered_once_trained_types_at_most_60():
    registry = load_registry(FOLDER)
    trained = {t.task_id for t in registry.select("train")}
    listed = set(train_types(FOLDER / "train_types.txt"))
    assert trained == {t.task_id for t in registry.select("heldout-seed")} == listed
    held_out = {t.task_id for t in registry.select("heldout-type")}
    assert len(trained) <= MAX_TRAIN_TYPES and not trained & held_out
    assert trained | held_out == set(registered("miniwob")) and len(trained | held_out) == 125
    assert {t.type for t in registry.select("nondeterministic")} == NONDETERMINISTIC
    assert all(t.seeds == range(TRAIN_SEEDS[0], TRAIN_SEEDS[1] + 1) for t in registry.select("train"))
    assert all(t.seeds == range(HELDOUT_SEEDS[0], HELDOUT_SEEDS[1] + 1) for t in registry.select("heldout"))
    assert not set(range(TRAIN_SEEDS[0], TRAIN_SEEDS[1] + 1)) & set(range(HELDOUT_SEEDS[0], HELDOUT_SEEDS[1] + 1))
    assert registry.get("miniwob.click-pie").index == "heldout-miniwob.click-pie"  # BrowserGym's id where unique
    assert env_kind(registry.env).name == "browsergym" and registry.tasks[0].env == "browsergym"


def test_the_committed_task_files_are_what_the_generator_writes():
    """`python -m loraloop.tasks.browsergym.miniwob configs/tasks/miniwob` after changing train_types.txt."""
    for name, text in task_files(FOLDER / "train_types.txt").items():
        assert (FOLDER / name).read_text() == text, f"{name} is stale: rerun the generator"


def test_the_task_class_is_browsergyms_own():
    from browsergym.miniwob.all import ClickButtonTask

    task = task_entrypoint("miniwob.click-button")(seed=3, base_url="http://127.0.0.1:1/miniwob/")
    assert type(task) is ClickButtonTask and task.url == "http://127.0.0.1:1/miniwob/click-button.html"


@pytest.mark.parametrize(
    "raw, message",
    [
        (
            {"task": "miniwob.click-buton", "seeds": [0, 9]},
            r"unknown task type 'miniwob\.click-buton'.*did you mean "
            r"miniwob\.click-button",
        ),
        ({"task": "click-button", "seeds": [0, 9]}, r"field 'task' must be a BrowserGym task id .* got 'click-button'"),
        (
            {"task": "nosuchbench.x", "seeds": [0, 9]},
            r"task 'nosuchbench\.x': BrowserGym benchmark 'nosuchbench' needs the "
            r"package browsergym\.nosuchbench",
        ),
        ({"task": "miniwob.click-button", "seeds": [9, 0]}, r"field 'seeds' must be \[first, last\].* got \[9, 0\]"),
        ({"task": "miniwob.click-button", "seeds": [0, True]}, r"field 'seeds'"),
        ({"task": "miniwob.click-button", "seeds": [0, 9], "x": 1}, r"unknown field\(s\) x"),
    ],
)
def test_a_bad_task_line_is_named(raw, message):
    with pytest.raises(Exception, match=message) as err:
        parse_task(raw, TaskContext(file="t.jsonl", number=4, split="train"))
    assert "t.jsonl: task 4" in str(err.value)


def test_a_seed_outside_the_split_is_named():
    task = parse_task(
        {"task": "miniwob.click-button", "seeds": [0, 49]}, TaskContext(file="t.jsonl", number=0, split="train")
    )
    assert task.seed_for(1207) == 7 and task.seed_for(None) == 0 and task.seed_for(0, 49) == 49
    for bad in (50, -1, "3", 2.0, True):
        with pytest.raises(
            ConfigError,
            match=rf"seed {bad!r} is outside split 'train' of miniwob\.click-button "
            r"\(seeds 0-49, t\.jsonl#0\)",
        ):
            task.seed_for(0, bad)


def test_a_task_line_is_the_browsergym_kinds_in_a_folder_without_registry(tmp_path):
    raw = {"task": "miniwob.click-test", "seeds": [0, 4]}
    assert kind_of_raw(raw).name == "browsergym"
    (tmp_path / "t.json").write_text(json.dumps([raw]))
    assert [t.index for t in load_registry(tmp_path / "t.json").tasks] == ["t-miniwob.click-test"]  # file prefix


def test_static_text_carries_its_hidden_elements_bid_only_when_asked():
    ax = [
        {
            "nodeId": "1",
            "role": {"value": "RootWebArea"},
            "name": {"value": "T"},
            "childIds": ["2", "4"],
            "backendDOMNodeId": 1,
        },
        {
            "nodeId": "2",
            "parentId": "1",
            "role": {"value": "generic"},
            "name": {"value": ""},
            "childIds": ["3"],
            "backendDOMNodeId": 2,
        },
        {
            "nodeId": "3",
            "parentId": "2",
            "role": {"value": "StaticText"},
            "name": {"value": "Carlynne"},
            "backendDOMNodeId": 3,
        },
        {
            "nodeId": "4",
            "parentId": "1",
            "role": {"value": "button"},
            "name": {"value": "Go"},
            "childIds": ["5"],
            "backendDOMNodeId": 4,
        },
        {
            "nodeId": "5",
            "parentId": "4",
            "role": {"value": "StaticText"},
            "name": {"value": "Go now"},
            "backendDOMNodeId": 5,
        },
    ]
    bids = {1: "0", 2: "20", 4: "21"}
    assert flatten_axtree(ax, bids) == (
        "[0] RootWebArea 'T'\n\tStaticText 'Carlynne'\n\t[21] button 'Go'\n\t\tStaticText 'Go now'"
    )
    assert flatten_axtree(ax, bids, text_bids=True).splitlines()[1] == "\t[20] StaticText 'Carlynne'"


def _ax(root_name: str, *texts: str, root_role: str = "RootWebArea") -> list[dict]:
    """A page titled `root_name` whose texts each sit in an unnamed span (MiniWoB's captcha letters)."""
    spans = [str(10 + i) for i in range(len(texts))]
    ax = [{"nodeId": "1", "role": {"value": root_role}, "name": {"value": root_name}, "childIds": spans}]
    for i, (span, text) in enumerate(zip(spans, texts)):
        ax.append({"nodeId": span, "parentId": "1", "role": {"value": "generic"}, "name": {"value": ""},
                   "childIds": [f"t{i}"], "backendDOMNodeId": 100 + i})  # fmt: skip
        ax.append({"nodeId": f"t{i}", "parentId": span, "role": {"value": "StaticText"}, "name": {"value": text}})
    return ax


@given(st.lists(st.text(alphabet="abcTest xyz", max_size=6), max_size=6))
def test_a_static_text_is_dropped_when_empty_or_part_of_the_name_it_is_shown_under_but_not_the_title(texts):
    """text-transform's letter 'e' under an unnamed span stays though the page's title 'Text Task' holds it; under
    a link named 'Text Task' (a mail's row: its spans' texts make its name) it is dropped; an empty StaticText is
    never a line (as BrowserGym's flatten_axtree_to_str)."""
    lines = flatten_axtree(_ax("Text Task", *texts), {}).splitlines()
    assert lines == ["RootWebArea 'Text Task'"] + [f"\tStaticText {t.strip()!r}" for t in texts if t.strip()]
    in_link = flatten_axtree(_ax("Text Task", *texts, root_role="link"), {}).splitlines()
    assert in_link == ["link 'Text Task'"] + [
        f"\tStaticText {t.strip()!r}" for t in texts if t.strip() and t.strip() not in "Text Task"
    ]


OBSERVATION = """# Goal
Enter the username "cierra" and the password "11L" into the text fields and press login.

# Open tabs
Tab 0 (active): http://127.0.0.1:1/miniwob/login-user.html

# Accessibility tree
RootWebArea 'Login User Task', focused
\t[15] StaticText 'Username'
\t[16] textbox '', value='cierra'
\t[19] textbox ''
\t[20] button 'Login'"""


def test_the_solver_reads_the_goal_and_the_tree():
    assert goal_of(OBSERVATION).startswith("Enter the username") and "login-user" in SOLVED
    assert nodes(OBSERVATION)[2] == Node("16", "textbox", "", 1, ", value='cierra'")
    assert nodes(OBSERVATION)[2].prop("value") == "cierra"
    goal = goal_of(OBSERVATION)
    assert solve("login-user", goal, OBSERVATION, 1, ["fill('16', 'cierra')"]) == "fill('19', '11L')"
    assert solve("login-user", goal, OBSERVATION, 2, ["fill('19', '11L')"]) == "click('20')"  # a password shows none
    assert solve("bisect-angle", "", OBSERVATION, 0, []).startswith("report_infeasible('no scripted strategy")


TREE = """# Accessibility tree
RootWebArea 'Navigate Tree Task', focused
\t[16] list ''
\t\t[17] listitem '', level=1
\t\t\t[19] StaticText 'Michel'
\t\t[21] listitem '', level=1
\t\t\t[22] StaticText 'Riley'
\t\t[31] listitem '', level=1
\t\t\t[33] StaticText 'Keli'"""  # after navigate-tree seed 1: a folder has an expander (18, 32) before its name


def test_the_solver_opens_folders_never_files_until_the_name_shows():
    goal = 'Navigate through the file tree. Find and click on the folder or file named "Augus".'
    assert solve("navigate-tree", goal, TREE, 0, []) == "click('19')"  # Michel: a folder; Riley (22) is a file
    assert solve("navigate-tree", goal, TREE, 1, ["click('19')"]) == "click('33')"
    assert solve("navigate-tree", goal, TREE, 2, ["click('19')", "click('33')"]).startswith("report_infeasible(")
    shown = TREE + "\n\t\t\t\t[40] StaticText 'Augus'"
    assert solve("navigate-tree", goal, shown, 2, ["click('19')", "click('33')"]) == "click('40')"


@pytest.mark.parametrize("letters", ["", "L", "LO4e"])
def test_the_solver_types_the_captcha_letter_by_letter(letters):
    page = "\n".join(
        ["# Accessibility tree", "RootWebArea 'Text Transform Task', focused"]
        + [f"\t[{14 + i}] StaticText {c!r}" for i, c in enumerate(letters)]
        + ["\t[19] textbox ''", "\t[20] button 'Submit'"]
    )
    goal = "Type the text below into the text field and press Submit."
    action = solve("text-transform", goal, page, 0, [])
    if not letters:  # no captcha on the page: nothing to type
        assert action.startswith("report_infeasible(")
        return
    assert action == f"fill('19', {letters!r})"
    assert solve("text-transform", goal, page, 1, [action]) == "click('20')"
