"""`loraloop report`: success by loop iteration and by training algorithm, over a store laid out as `loraloop train
rl` and `make loop` leave it (adapter versions with their training metrics, an RL run's iteration and evaluation
runs, a loop run with teacher, base and adapter episodes), written through the store's own API."""

import csv
import json

import pytest

from loraloop.errors import ConfigError
from loraloop.evaluate.iterations import measure, select_runs, write_iteration_report
from loraloop.store import adapters
from loraloop.store.backends import FileStore
from loraloop.store.records import EpisodeEnd, EpisodeStart, Step
from loraloop.store.trajectories import EpisodeRecorder
from tests.helpers import run_cli

LOOP_RUN = "20250101-000000-aaaa"
VIEWER = "http://viewer:8080"


def played(store, mode, run, split, model, solved, tasks, attempts=1, policy="openai"):
    """`tasks` x `attempts` episodes of `model` on `split`, the first `solved` of them solved."""
    for n in range(tasks * attempts):
        task, attempt = f"{split}-coin-{n % tasks:05d}", n // tasks
        rec = EpisodeRecorder(store, mode, run, task, attempt)
        rec.add(
            EpisodeStart(
                task_id=task,
                mode=mode,
                run_id=run,
                attempt_idx=attempt,
                split=split,
                policy=policy,
                worker_model=model,
                category="coin",
            )
        )
        rec.add(Step(step_idx=0, raw_output="Act: answer(root)", model=model))
        rec.add(EpisodeEnd(success=n < solved, reward=float(n < solved), total_steps=1))
        rec.flush()


def published(store, tmp_path, name, metrics):
    """The next version of adapter `name`, trained as `metrics` say (the files a PEFT adapter holds)."""
    folder = tmp_path / "adapter"
    folder.mkdir(exist_ok=True)
    (folder / "adapter_config.json").write_text(json.dumps({"r": 8}))
    (folder / "adapter_model.safetensors").write_bytes(b"weights")
    return adapters.upload(store, name, folder, {"training_metrics": metrics})


@pytest.fixture
def store(tmp_path):
    store = FileStore(tmp_path / "store")
    # `train rl --adapter_name rl1 --init_adapter <bc>`: v1 the BC warm start, v2 and v3 RL iterations 1 and 2
    for metrics in (
        {"algorithm": "bc"},
        {"algorithm": "rl", "rl_iteration": 0},
        {"algorithm": "rl", "rl_iteration": 1},
    ):
        published(store, tmp_path, "rl1", metrics)
    played(store, "rl_test", "rl1-eval-v1", "test", "rl1-v1", 1, 4)
    played(store, "rl_test", "rl1-eval-v3", "test", "rl1-v3", 3, 4)
    played(store, "rl_test", "rl1-it0000", "train", "rl1-v1", 3, 2, attempts=4)
    played(store, "rl_test", "rl1-it0001", "train", "rl1-v2", 5, 2, attempts=4)
    # a `make loop` turn: teacher rollouts, then the base model and the BC adapter on the test variants
    published(store, tmp_path, "smollm_bc", {"algorithm": "bc"})
    played(store, "teacher", LOOP_RUN, "train", "scripted-teacher", 3, 3, policy="scripted")
    played(store, "smollm_zero", LOOP_RUN, "test", "SmolLM2-135M-Instruct", 0, 2)
    played(store, "smollm_bc", LOOP_RUN, "test", "smollm_bc-v1", 2, 2)
    (tmp_path / "store/trajectories/smollm_bc" / LOOP_RUN / "test-coin-00009__attempt_0.jsonl").write_text("{bad\n")
    played(store, "smollm_zero", "not-asked-for", "test", "SmolLM2-135M-Instruct", 1, 1)
    return store


def test_each_version_by_iteration_with_what_trained_it(store):
    measured, notes = measure(store, select_runs(store, ["rl1-*", LOOP_RUN]))
    assert [
        (m.series, m.version.iteration, m.version.trained_by, m.run_id, m.row.solved, m.row.episodes) for m in measured
    ] == [
        ("rl_test · test", 1, "bc", "rl1-eval-v1", 1, 4),
        ("rl_test · test", 3, "rl (RL iteration 2)", "rl1-eval-v3", 3, 4),
        ("rl_test · train", 1, "bc", "rl1-it0000", 3, 8),
        ("rl_test · train", 2, "rl (RL iteration 1)", "rl1-it0001", 5, 8),
        ("smollm_bc · test", 1, "bc", LOOP_RUN, 2, 2),
        ("smollm_zero · test", 0, "base model", LOOP_RUN, 0, 2),
    ]
    assert notes == [
        "left out: 3 episodes of `teacher` (a scripted policy, no model)",
        "left out: 1 corrupt episodes (shown as corrupt in the viewer)",
    ]


def test_report_files_link_each_version_to_its_episodes(store, tmp_path):
    md, _ = write_iteration_report(store, select_runs(store, ["rl1-*", LOOP_RUN]), tmp_path / "out", "across", VIEWER)
    text = md.read_text()
    episodes = f"{VIEWER}/ui/runs/rl_test/rl1-eval-v3"
    assert (
        f"| 3 | rl1-v3 | rl (RL iteration 2) | [`rl_test` / `rl1-eval-v3`]({episodes}?model=rl1-v3) | test "
        f"| 4 | [4]({episodes}?model=rl1-v3) | 75.0% ([3]({episodes}?outcome=solved&model=rl1-v3)/4; 30%–95%) |"
    ) in text
    # by algorithm, versions pooled: rl on train is v2 only (5/8); bc on test is rl1-v1 and smollm_bc-v1 (3/6)
    assert "| rl | train | 1 | 8 | 62.5% (5/8; 31%–86%) |" in text
    assert "| bc | test | 2 | 6 | 50.0% (3/6; 19%–81%) |" in text
    assert "| base | test | 1 | 2 | 0.0% (0/2; 0%–66%) |" in text and "not-asked-for" not in text
    with (tmp_path / "out" / "report.csv").open() as handle:
        table = list(csv.DictReader(handle))
    assert [(r["iteration"], r["algorithm"], r["run_id"], r["solved"]) for r in table][:2] == [
        ("1", "bc", "rl1-eval-v1", "1"),
        ("3", "rl", "rl1-eval-v3", "3"),
    ]
    for chart in ("success_by_iteration.png", "success_by_algorithm.png"):
        assert (tmp_path / "out" / chart).stat().st_size > 5000


def test_bad_runs(store, tmp_path):
    with pytest.raises(ConfigError, match=r"--runs 'rl2-\*': no run of that id in file://.* \(newest runs there: "):
        select_runs(store, ["rl1-*", "rl2-*"])
    with pytest.raises(ConfigError, match="hold no episode sampled by a model .*3 episodes of `teacher`"):
        write_iteration_report(
            store, [r for r in select_runs(store, [LOOP_RUN]) if r.mode == "teacher"], tmp_path / "out", "teacher only"
        )


def test_the_command(store, tmp_path):
    """`loraloop report` prints the table and writes the files; an unknown run: exit 1 naming it, no traceback."""
    done = run_cli(["report", "--runs", "rl1-*", "--store", store.url, "--out", str(tmp_path / "out")])
    assert done.returncode == 0, done.stderr
    assert "| 2 | rl1-v2 | rl (RL iteration 1) |" in done.stdout and (tmp_path / "out" / "report.md").is_file()
    unknown = run_cli(["report", "--runs", "nope", "--store", store.url])
    assert unknown.returncode == 1 and "--runs 'nope': no run of that id" in " ".join(unknown.stderr.split())
    assert "Traceback" not in unknown.stderr


def test_make_report_passes_each_run_quoted():
    """`make report RUNS=...`: one --runs per word, quoted so that the shell leaves patterns to the command."""
    import subprocess

    from tests.helpers import ROOT

    make = subprocess.run(["make", "-n", "report", "RUNS=rl1-* 2025*"], cwd=ROOT, capture_output=True, text=True)
    assert make.returncode == 0 and "loraloop report --runs 'rl1-*' --runs '2025*'" in make.stdout
    missing = subprocess.run(["make", "-n", "report"], cwd=ROOT, capture_output=True, text=True)
    assert missing.returncode != 0 and "set RUNS to run ids or patterns" in missing.stderr
