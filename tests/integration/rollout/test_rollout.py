"""Rollouts in real containers: the embedded default, real Celery workers over a real Redis, skipped and
crashed episodes named in the summary."""

import json
import os
import subprocess
import time

import pytest

from tests.helpers import LORALOOP, run_cli


def stored(store_dir, mode):
    return sorted((store_dir / "trajectories" / mode).rglob("*.jsonl"))


@pytest.mark.usefixtures("docker_ready")
def test_embedded_rollout_stores_every_episode(tmp_path):
    env = {"LORALOOP_STORE_URL": f"file://{tmp_path}"}
    proc = run_cli(
        [
            "rollout",
            "--experiment",
            "teacher",
            "--subset",
            "test",
            "--sample_size",
            "4",
            "--rollouts_per_task",
            "2",
            "--run_id",
            "emb",
        ],
        env,
    )
    assert proc.returncode == 0, proc.stderr
    files = stored(tmp_path, "teacher")
    assert len(files) == 8
    start = json.loads(files[0].read_text().splitlines()[0])
    assert start["type"] == "episode_start" and start["task_seed"] == 123 and start["run_id"] == "emb"
    ends = [json.loads(f.read_text().splitlines()[-1]) for f in files]
    assert all(e["type"] == "episode_end" and e["success"] for e in ends)


@pytest.mark.usefixtures("docker_ready")
def test_celery_workers_over_redis(tmp_path, redis_url):
    env = {"LORALOOP_STORE_URL": f"file://{tmp_path}", "LORALOOP_BROKER_URL": redis_url}
    worker = subprocess.Popen(
        LORALOOP + ["worker", "--concurrency", "3", "--loglevel", "warning"],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    rollout = None
    try:  # submitted at once: the job waits in Redis while the worker starts; a worker that dies fails it now
        rollout = subprocess.Popen(
            LORALOOP
            + ["rollout", "--experiment", "teacher", "--subset", "train", "--sample_size", "5", "--run_id", "celery"],
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 600
        while True:
            try:
                _, err = rollout.communicate(timeout=1)
                break
            except subprocess.TimeoutExpired:
                assert worker.poll() is None, worker.stderr.read().decode()[-2000:]
                assert time.monotonic() < deadline, "the rollout did not end within 600 s"
        assert rollout.returncode == 0, err
        assert "5/5 solved" in err.replace("\n", " ")
        assert len(stored(tmp_path, "teacher")) == 5
    finally:
        if rollout is not None and rollout.poll() is None:
            rollout.kill()
        worker.terminate()
        worker.wait(timeout=30)


@pytest.mark.usefixtures("docker_ready")
def test_teacher_skips_a_task_without_example_and_the_summary_names_a_crashed_task(tmp_path):
    """Match-only AgentBench tasks have no example: skipped with the reason, not a crash. A task
    whose example file is missing really crashes its episode: the summary names that task."""
    folder = tmp_path / "tasks"
    (folder / "scripts" / "check").mkdir(parents=True)
    (folder / "scripts" / "check" / "same.py").write_text(
        "import sys\nsys.exit(sys.argv[1].strip() != sys.argv[2].strip())\n"
    )
    (folder / "set.json").write_text(
        json.dumps(
            [
                {"description": "How many CPUs? Answer with the number.", "evaluation": {"match": "1"}},
                {
                    "description": "Echo hi.",
                    "evaluation": {
                        "check": [None, {"language": "python", "file": "check/same.py"}],
                        "example": {"file": "example/missing.sh"},
                    },
                },
                {
                    "description": "Echo hi.",
                    "evaluation": {
                        "check": [None, {"language": "python", "file": "check/same.py"}],
                        "example": "echo hi",
                    },
                },
            ]
        )
    )
    (folder / "registry.yaml").write_text("sets: [{split: s, files: set.json, scripts: scripts, index_prefix: t-}]\n")
    proc = run_cli(
        ["rollout", "--experiment", "teacher", "--task_registry", str(folder), "--run_id", "skip"],
        {"LORALOOP_STORE_URL": f"file://{tmp_path / 'store'}", "COLUMNS": "2000"},
    )
    assert proc.returncode == 0, proc.stderr
    summary = " ".join(proc.stderr.split())
    assert "1/3 solved, 1 ended in an error (1 crash), 1 skipped (the policy cannot play them)" in summary
    assert (
        "skipped t-set-00000: task t-set-00000 has no example solution: the scripted teacher cannot play it" in summary
    )
    assert "t-set-00001: TaskFormatError: script file" in summary and "None:" not in summary
    ends = {
        f.parent.name + "/" + f.name: json.loads(f.read_text().splitlines()[-1])
        for f in stored(tmp_path / "store", "teacher")
    }
    skipped = next(e for k, e in ends.items() if "t-set-00000" in k)
    assert skipped["status"] == "skipped" and "no example solution" in skipped["reason"] and not skipped["error"]
    crashed = next(e for k, e in ends.items() if "t-set-00001" in k)
    assert crashed["status"] == "crash" and "missing.sh" in crashed["error"]


@pytest.mark.usefixtures("docker_ready")
def test_rollout_works_from_another_folder(tmp_path):
    """`--config` and `--task_registry` default to paths relative to the checkout: typed elsewhere, they are found."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {"LORALOOP_STORE_URL": f"file://{tmp_path / 'store'}"}
    proc = run_cli(
        [
            "rollout",
            "--experiment",
            "teacher",
            "--task_registry",
            "configs/tasks/os",
            "--subset",
            "test",
            "--sample_size",
            "1",
            "--run_id",
            "away",
        ],
        cwd=elsewhere,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "1/1 solved" in " ".join(proc.stderr.split())
    assert len(list((tmp_path / "store" / "trajectories" / "teacher" / "away").glob("*.jsonl"))) == 1
    assert list(elsewhere.iterdir()) == []  # nothing landed in the folder the command was typed in
