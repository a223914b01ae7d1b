"""The whole loop at a tiny size: through the CLI's commands (rollout → export → train → publish → eval),
and through `loraloop loop` (the orchestrator) over two seeds.

The model's eval episodes are cut short (SHORT_EPISODES): vLLM CPU writes about 10 tokens/s here, and
8 rounds of 192 tokens per episode made these two tests take 25 minutes; one round of 32 tokens still
calls the base model and the published adapter on every eval episode (2 rounds of 48 cost the suite about
a minute more of its 20)."""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from loraloop.envs.shell.docker import OWNER_LABEL
from loraloop.serve import vllm_server

LORALOOP = [sys.executable, "-m", "loraloop.cli"]
SHORT_EPISODES = {"max_steps": 1, "max_tokens": 32}  # the model's eval episodes: rounds, tokens per reply


@pytest.fixture
def loop_env(tmp_path, vllm_url):
    """The environment of a loop against the session's vLLM: a store and adapters under tmp_path, and
    configs/experiments.yaml with the model's experiments cut to SHORT_EPISODES rounds."""
    experiments = yaml.safe_load(Path("configs/experiments.yaml").read_text())
    for name in ("smollm_zero", "smollm_bc"):
        experiments["experiments"][name]["max_steps"] = SHORT_EPISODES["max_steps"]
    short = tmp_path / "experiments.yaml"
    short.write_text(yaml.safe_dump(experiments))
    return {
        **os.environ,
        "LORALOOP_STORE_URL": f"file://{tmp_path / 'store'}",
        "LORALOOP_VLLM_URL": vllm_url,
        "LORALOOP_VLLM_PORT": vllm_url.rsplit(":", 1)[1].split("/")[0],
        "LORALOOP_ADAPTERS_DIR": str(tmp_path / "adapters"),
        "LORALOOP_EXPERIMENTS_PATH": str(short),
        "LORALOOP_MAX_TOKENS": str(SHORT_EPISODES["max_tokens"]),
    }


@pytest.mark.usefixtures("docker_ready")
def test_whole_loop(tmp_path, loop_env):
    def cli(*args):
        proc = subprocess.run(LORALOOP + list(args), env=loop_env, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"loraloop {' '.join(args)} failed:\n{proc.stderr[-3000:]}"
        return proc

    cli("rollout", "--experiment", "teacher", "--subset", "train", "--sample_size", "3", "--run_id", "e2e")
    cli("export", "--input", "trajectories/teacher/e2e", "--output_dir", str(tmp_path / "ds"), "--format", "bc")
    manifest = json.loads((tmp_path / "ds" / "manifest.json").read_text())
    assert manifest["episodes"] == 3 and manifest["rows"] == {"bc": 6}
    cli(
        "train",
        "bc",
        "--dataset_path",
        str(tmp_path / "ds" / "bc.jsonl"),
        "--output_dir",
        str(tmp_path / "lora"),
        "--epochs",
        "1",
        "--lr",
        "1e-3",
        "--batch_size",
        "3",
    )
    assert (tmp_path / "lora" / "adapter_model.safetensors").is_file()
    published = cli("publish", "--adapter", str(tmp_path / "lora"), "--name", "smollm_bc")
    assert "published smollm_bc v1" in published.stderr.replace("\n", " ")
    meta = json.loads((tmp_path / "store" / "adapters" / "smollm_bc" / "v1" / "metadata.json").read_text())
    assert (
        meta["dataset_digest"]
        == json.loads((tmp_path / "lora" / "training_metrics.json").read_text())["dataset_digest"]
    )
    cli(
        "eval",
        "--experiment",
        "smollm_zero",
        "--experiment",
        "smollm_bc",
        "--subset",
        "test",
        "--sample_size",
        "1",
        "--eval_id",
        "e2e-eval",
        "--out",
        str(tmp_path / "report"),
    )
    table = (tmp_path / "report" / "e2e-eval" / "report.md").read_text()
    for mode, model in (("smollm_zero", "SmolLM2-135M-Instruct"), ("smollm_bc", "smollm_bc-v1")):  # 1 task, 1 episode
        assert re.search(rf"\| `{mode}` \| {model} \| 1 \| \[1\]\(http://[^)]+/ui/runs/{mode}/e2e-eval\) \|", table)
    assert "McNemar" in table and (tmp_path / "report" / "e2e-eval" / "report.csv").is_file()
    assert (tmp_path / "report" / "e2e-eval" / "success.png").stat().st_size > 1000
    stored = json.loads((tmp_path / "store" / "evals" / "e2e-eval" / "results.json").read_text())
    assert [r["experiment"] for r in stored] == ["smollm_zero", "smollm_bc"]
    again = cli(
        "eval",
        "--experiment",
        "smollm_zero",
        "--subset",
        "test",
        "--sample_size",
        "1",
        "--eval_id",
        "e2e-eval",
        "--out",
        str(tmp_path / "report"),
    )  # the same id goes on: nothing is played again
    assert "going on" in again.stderr and "1 already stored" in again.stderr.replace("\n", " ")
    bc_steps = [
        json.loads(line)
        for f in (tmp_path / "store" / "trajectories" / "smollm_bc").rglob("*.jsonl")
        for line in f.read_text().splitlines()
    ]
    assert {r["model"] for r in bc_steps if r["type"] == "step"} == {"smollm_bc-v1"}  # the bare name, pinned
    assert {r["max_steps"] for r in bc_steps if r["type"] == "episode_start"} == {SHORT_EPISODES["max_steps"]}


def tiny_registry(root: Path, families=("count-ext",), train: int = 3) -> Path:
    """The shell task set cut to `train` tasks of each family to train on and one unseen variant to test on."""
    source = Path("configs/tasks/os")
    root.mkdir()
    shutil.copy(source / "registry.yaml", root / "registry.yaml")
    shutil.copytree(source / "scripts", root / "scripts")
    for split, count in (("train", train), ("test", 1)):
        (root / split).mkdir()
        for family in families:
            tasks = json.loads((source / split / f"{family}.json").read_text())[:count]
            (root / split / f"{family}.json").write_text(json.dumps(tasks))
    return root


def containers_of(pid: int) -> list[str]:
    """The ids of the environment containers process `pid` owns (the owner label every one carries)."""
    return subprocess.run(
        ["docker", "ps", "-aq", "--filter", f"label={OWNER_LABEL}={socket.gethostname()}:{pid}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()


@pytest.mark.timeout(900)
@pytest.mark.usefixtures("docker_ready")
def test_the_demo_runs_its_plan_and_leaves_every_promised_artifact(tmp_path, loop_env, vllm_url):
    """`loraloop demo` (demo_plan, what `make demo` runs: every stage and the report) on a registry cut to two
    training tasks and one held-out variant of one of its families (the plan's subsets select what is there):
    exit 0, the report, its CSV, the success chart (each row 0/1 or 1/1: the chart once crashed on 10/10)
    and the loss curve; the closing summary names both arms with intervals, the stages' times and the paths;
    no environment container is left."""
    demo = subprocess.Popen(
        LORALOOP
        + [
            "demo",
            "--epochs",
            "1",
            "--out",
            str(tmp_path / "demo"),
            "--task_registry",
            str(tiny_registry(tmp_path / "tasks", ("count-ext",), train=2)),
        ],
        env=loop_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = demo.communicate(timeout=850)
    proc = subprocess.CompletedProcess(demo.args, demo.returncode, stdout, stderr)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = (tmp_path / "demo").iterdir()
    summary = json.loads((run / "summary.json").read_text())
    for artifact in ("report.md", "report.csv", "success.png", "bc_lora/loss.png"):
        assert (run / artifact).is_file() and (run / artifact).stat().st_size > 100, artifact
        assert summary["artifacts"][artifact] == str(run / artifact)
        assert str(run / artifact) in proc.stderr.replace("\n", ""), f"{artifact} not in the closing summary"
    results = summary["results"]
    assert {name: r["episodes"] for name, r in results.items()} == {"smollm_zero": 1, "smollm_bc": 1}
    for r in results.values():  # 0/1 or 1/1: a boundary row, drawn
        low, high = r["ci95"]
        assert low <= r["success_rate"] <= high and f"{r['solved']}/1 = " in proc.stderr
    assert list(summary["stages_s"]) == [
        "prepare model",
        "start vLLM",
        "teacher rollouts",
        "export BC dataset",
        "train BC LoRA",
        "publish adapter to vLLM",
        "eval base vs adapter",
    ]
    assert "95% CI" in proc.stderr and "wall time" in proc.stderr
    assert containers_of(demo.pid) == [], "the demo left environment containers behind"
    assert vllm_server.is_ready(vllm_url), "the demo stopped a vLLM it did not start"


@pytest.mark.timeout(1800)  # two turns: teacher rollouts, training, publishing and eval each
@pytest.mark.usefixtures("docker_ready")
def test_loop_runs_a_turn_per_seed_and_reports_over_them(tmp_path, loop_env, vllm_url):
    """`loraloop loop` (the orchestrator) on a tiny task set, two seeds, against the running vLLM: a turn
    per seed with its report and timed stages, a report over the seeds, and the server it found left
    running."""
    # lr 3e-3: two steps on six rows must move the adapter enough for publish's check to tell it from the base
    proc = subprocess.run(
        LORALOOP
        + [
            "loop",
            "--task_registry",
            str(tiny_registry(tmp_path / "tasks")),
            "--train_subset",
            "train",
            "--test_subset",
            "test",
            "--seeds",
            "1,2",
            "--epochs",
            "1",
            "--lr",
            "3e-3",
            "--rollouts_per_task",
            "1",
            "--out",
            str(tmp_path / "loop"),
        ],
        env=loop_env,
        capture_output=True,
        text=True,
        timeout=1700,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run,) = (tmp_path / "loop").iterdir()
    report = (run / "report.md").read_text()
    assert "| seed 1 | seed 2 | mean | sd | episodes |" in report
    assert "| `smollm_zero` |" in report and "| `smollm_bc` |" in report and (run / "learning.png").is_file()
    turns = json.loads((run / "summary.json").read_text())["turns"]
    assert [t["seed"] for t in turns] == [1, 2] and [t["adapter"]["version"] for t in turns] == ["v1", "v2"]
    for seed, turn in zip((1, 2), turns):
        assert (run / f"seed-{seed}" / "report.md").is_file() and (run / f"seed-{seed}" / "success.png").is_file()
        assert turn["dataset"]["episodes"] == 3 and turn["training"]["rows"] == turn["dataset"]["rows"]["bc"] > 0
        assert list(turn["stages_s"]) == [
            "prepare model",
            "start vLLM",
            "teacher rollouts",
            "export BC dataset",
            "train BC LoRA",
            "publish adapter to vLLM",
            "eval base vs adapter",
        ]
        assert {name: r["episodes"] for name, r in turn["results"].items()} == {"smollm_zero": 1, "smollm_bc": 1}
        for artifact in ("report.csv", "bc_lora/loss.png"):  # the turn's artifacts, as the demo's
            assert (run / f"seed-{seed}" / artifact).is_file(), artifact
    assert vllm_server.is_ready(vllm_url), "the loop stopped a vLLM it did not start"
