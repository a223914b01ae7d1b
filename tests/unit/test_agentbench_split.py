"""AgentBench's OS training set split in two: 900 to train on, 100 held out, by committed id lists."""

import shutil
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loraloop.errors import ConfigError, TaskFormatError
from loraloop.learning import check_split, failure_mode
from loraloop.learning_config import LearningPlan, MiniWobPlan
from loraloop.store.records import EpisodeEnd, EpisodeStart, Step
from loraloop.store.trajectories import Episode
from loraloop.task_registry import load_registry
from loraloop.tasks.shell.agentbench import agentbench_registry
from loraloop.tasks.shell.agentbench_split import MIN_FAMILY, OTHER, family, heldout_split
from loraloop.tasks.shell.format import parse_shell_task

FOLDER = Path("configs/tasks/agentbench-os")


@pytest.fixture(scope="module")
def registry():
    return load_registry(FOLDER)


def test_the_committed_split_is_900_and_100_disjoint_and_covers_the_set(registry):
    train, held = registry.select("train"), registry.select("heldout")
    assert (len(train), len(held)) == (900, 100)
    assert {t.index for t in train}.isdisjoint({t.index for t in held})
    assert {t.index for t in train} | {t.index for t in held} == {t.index for t in agentbench_registry(FOLDER).tasks}
    assert check_split(registry, LearningPlan()) == (900, 100)


def test_the_committed_lists_are_what_the_seeded_stratified_sample_gives():
    """Reproducible: `loraloop tasks split` with seed 0 writes these lists again, family for family."""
    held, train = heldout_split(agentbench_registry(FOLDER).tasks, 100, 0)

    def listed(name):
        lines = [line.split() for line in (FOLDER / name).read_text().splitlines() if not line.startswith("#")]
        return {index: fam for index, fam in lines}

    assert listed("heldout.txt") == held and listed("train.txt") == train


def test_every_family_is_in_both_splits_in_proportion(registry):
    held = Counter(label for t in registry.select("heldout") for label in t.labels if label.startswith("family:"))
    train = Counter(label for t in registry.select("train") for label in t.labels if label.startswith("family:"))
    assert set(held) == set(train) and len(held) >= 4
    for name, count in held.items():
        assert abs(count - (count + train[name]) / 10) < 1, name  # a tenth of each family, within rounding


def task(index: str, example: str):
    return parse_shell_task(
        {"description": "d", "evaluation": {"match": "1", "example": example}}, file="f.json", number=0, index=index
    )


@pytest.mark.parametrize(
    "example,expected",
    [
        ("ps aux | wc -l", "processes"),
        ("find . -perm -u+x | wc -l", "permissions"),
        ("du -sb ~ | cut -f1", "size"),
        ("find ~ -mtime -7 | wc -l", "time"),
        ("cut -d' ' -f1 a.log | sort | uniq | wc -l", "unique-sort"),
        ("grep -c error *.log", "text-search"),
        ("echo $((1+2))", OTHER),
    ],
)
def test_a_family_is_read_off_the_tool_the_example_uses(example, expected):
    assert family(task("t-00000", example)) == expected


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 60), min_size=1, max_size=6), size=st.integers(1, 200), seed=st.integers(0, 99))
def test_a_split_has_exactly_size_tasks_and_is_the_same_for_a_seed(sizes, size, seed):
    """Boundaries included: one family, families below MIN_FAMILY (folded into OTHER), size 1 and n-1."""
    examples = ["ps", "chmod 1 x", "du x", "date", "sort x", "grep x"]
    tasks = [task(f"t-{f}-{i:05d}", examples[f]) for f, n in enumerate(sizes) for i in range(n)]
    if not 0 < size < len(tasks):
        with pytest.raises(TaskFormatError, match="--size must be between 1 and"):
            heldout_split(tasks, size, seed)
        return
    held, train = heldout_split(tasks, size, seed)
    assert len(held) == size and len(train) == len(tasks) - size and not set(held) & set(train)
    assert (held, train) == heldout_split(tasks, size, seed)
    assert all(
        sizes[examples.index(e)] >= MIN_FAMILY or fam == OTHER
        for fam, e in [(fam, examples[int(i.split("-")[1])]) for i, fam in held.items()]
    )


def registry_copy(tmp_path: Path, heldout: str, train: str) -> Path:
    copy = tmp_path / "ab"
    shutil.copytree(FOLDER, copy)
    (copy / "heldout.txt").write_text(heldout)
    (copy / "train.txt").write_text(train)
    return copy


def test_a_held_out_task_in_the_training_list_is_refused_naming_both_lines(tmp_path):
    copy = registry_copy(tmp_path, "train-training-00000 time\n", "# c\ntrain-training-00001\ntrain-training-00000\n")
    with pytest.raises(
        TaskFormatError,
        match=r"'train-training-00000' is in train.txt line 3 \(split 'train'\) "
        r"and in heldout.txt line 1 \(split 'heldout'\)",
    ):
        load_registry(copy)


@pytest.mark.parametrize(
    "listing,message",
    [
        ("train-training-99999\n", r"heldout.txt: line 1: no task 'train-training-99999' in training.json"),
        ("train-training-00000 a b\n", r"heldout.txt: line 1: expected `index \[family\]`"),
        (
            "train-training-00000\ntrain-training-00000\n",
            r"heldout.txt: line 2: task 'train-training-00000' is listed "
            r"already \(line 1\)",
        ),
    ],
)
def test_a_bad_id_list_is_refused_naming_file_and_line(tmp_path, listing, message):
    with pytest.raises(TaskFormatError, match=message):
        load_registry(registry_copy(tmp_path, listing, "train-training-00001\n"))


def test_a_plan_whose_subsets_overlap_is_refused(registry):
    with pytest.raises(ConfigError, match="held-out subset 'heldout' are in the train subset 'train,heldout' too"):
        check_split(registry, LearningPlan(train_subset="train,heldout"))


def test_a_transfer_subset_that_overlaps_the_train_subset_is_refused(registry):
    """The transfer set is held out too: a task of it in the train subset is refused, naming the subset."""
    with pytest.raises(ConfigError, match="held-out subset 'train' are in the train subset 'train' too"):
        check_split(registry, LearningPlan(transfer_subset="train"))
    assert check_split(registry, LearningPlan(transfer_subset="")) == check_split(registry, LearningPlan())


@pytest.mark.parametrize("field", ["teacher_rollouts", "eval_rollouts", "bc_max_length"])
@pytest.mark.parametrize("value", [0, -1])
def test_a_plan_with_no_rollouts_per_task_or_no_bc_tokens_is_refused_naming_the_field(field, value):
    for plan in (LearningPlan, MiniWobPlan):
        with pytest.raises(ConfigError, match=f"{field} must be positive, got {value}"):
            plan(**{field: value})


@pytest.mark.parametrize("seeds", ["", "1,x", "1,1"])
def test_a_plan_with_bad_seeds_is_refused(seeds):
    with pytest.raises(ConfigError, match="seeds must be distinct integers"):
        LearningPlan(seeds=seeds)


def episode(status: str, actions: list[str], observations: list[str] | None = None, error: str | None = None):
    observations = observations or [""] * len(actions)
    start = EpisodeStart.model_validate({"type": "episode_start", "episode_id": "e", "task_id": "t", "attempt": 0})
    steps = [Step(step_idx=i, action=a, next_observation=o) for i, (a, o) in enumerate(zip(actions, observations))]
    return Episode("k", start, steps, EpisodeEnd(status=status, error=error))


@pytest.mark.parametrize(
    "ep,mode",
    [
        (episode("completed", ["bash", "answer"]), "wrong answer"),
        (episode("completed", ["bash", "finish"]), "finish without an answer"),
        (episode("round_limit", ["invalid"] * 8), "round limit: every action invalid"),
        (episode("round_limit", ["invalid", "bash"]), "round limit: some actions invalid"),
        (episode("round_limit", ["bash"], ["bash: foo: command not found"]), "round limit: actions that erred"),
        (episode("round_limit", ["bash"], ["3"]), "round limit: actions ran, no answer"),
        (episode("completed", ["click", "click"]), "ended unsolved after click"),
        (
            episode("round_limit", ["click"], ["# Error from the last action\nno element with bid '9'"]),
            "round limit: actions that erred",
        ),
        (
            episode("round_limit", ["fill", "click"], ["# Accessibility tree", "# Accessibility tree"]),
            "round limit: actions ran, no answer",
        ),
        (episode("env_error", [], error="no shell"), "environment or service error"),
        (episode("odd", []), "status odd"),
    ],
)
def test_failure_modes_are_read_from_the_records(ep, mode):
    assert failure_mode(ep) == mode


def test_the_command_line_is_built_from_the_plan(tmp_path):
    from typer.testing import CliRunner

    from loraloop.cli import app

    result = CliRunner().invoke(app, ["agentbench", "--help"])
    assert result.exit_code == 0
    for field in ("--heldout_subset", "--rl_iterations", "--eval_tasks", "--seeds", "--transfer_subset"):
        assert field in result.output
    miniwob = CliRunner().invoke(app, ["miniwob", "--help"], terminal_width=200)
    assert miniwob.exit_code == 0, miniwob.output
    assert "configs/tasks/miniwob" in miniwob.output and "heldout-type" in miniwob.output
    bad = CliRunner().invoke(app, ["agentbench", "--seeds", "1,1"])
    assert bad.exit_code != 0 and "seeds must be distinct integers" in bad.output + str(bad.exception)


def stored(store, run_id: str, solved: dict[str, bool]) -> None:
    """Episodes of the evaluator's run as a rollout stores them: start, one answer step, end."""
    from loraloop.store.trajectories import EpisodeRecorder

    for task_id, success in solved.items():
        recorder = EpisodeRecorder(store, "smollm_zero", run_id, task_id, 0)
        recorder.add(EpisodeStart(task_id=task_id, mode="smollm_zero", worker_model="m"))
        recorder.add(Step(step_idx=0, action="answer"))
        recorder.add(EpisodeEnd(success=success, reward=float(success), status="completed", total_steps=1))
        recorder.flush()


@pytest.mark.parametrize(
    "evaluated,shown",
    [
        ({}, None),
        ({"base": 0}, None),
        ({"base": 0, "bc-s1": 1}, ["0.0%", "50.0%", "–"]),
        ({"base": 0, "bc-s1": 1, "rl-s1": 2}, ["0.0%", "50.0%", "100.0%"]),
    ],
)
def test_the_report_has_what_is_evaluated_so_far(tmp_path, registry, evaluated, shown):
    """Boundaries of a stopped run: nothing evaluated, base alone, BC without BC+RL, all three."""
    from loraloop.learning import write_learning
    from loraloop.store import open_store

    store = open_store(f"file://{tmp_path / 'store'}")
    held = [t.index for t in registry.select("heldout")][:2]
    for run, solved in evaluated.items():  # `solved` of the two held-out tasks played
        stored(store, f"ab-{run}", {task: solved > i for i, task in enumerate(held)})
    plan = LearningPlan(name="ab", seeds="1")
    report = write_learning(store, tmp_path / "out", plan, {"eval base": 1.0}, "http://viewer", registry).read_text()
    assert "| eval base | 1.0 |" in report
    if shown is None:
        assert "No seed has its BC evaluation yet" in report and not (tmp_path / "out" / "learning.png").exists()
        return
    table = report.split("## Held-out success over seeds")[1]
    for label, cell in zip(("base", "BC", "BC+RL"), shown):
        line = next(
            line for line in table.splitlines() if line.startswith(f"| {label} ") or line.startswith(f"| {label}(")
        )
        assert f" {cell} |" in line, (label, line)
    assert ("BC+RL not evaluated yet" in report) == (shown[2] == "–")
    assert (tmp_path / "out" / "learning.png").stat().st_size > 0
    assert "http://viewer/ui/runs/smollm_zero/ab-bc-s1" in report
