"""The command line: the serve group and its old names, one source of defaults, and paths that do not
depend on the folder the command is typed in."""

import os
import re
import subprocess
import sys

from tests.helpers import ROOT, run_cli


def test_serve_group_lists_every_server_and_hides_the_old_names():
    serve = run_cli(["serve", "--help"])
    assert serve.returncode == 0
    assert all(name in serve.stdout for name in ("vllm", "sites", "task-server", "rollout-api"))
    top = run_cli(["--help"]).stdout
    assert " serve " in top and " worker " in top and "serve-api" not in top and "rollout-api" not in top


def test_old_rollout_api_name_says_so_and_does_the_same():
    env = {"LORALOOP_BROKER_URL": ""}
    new, old = run_cli(["serve", "rollout-api"], env=env), run_cli(["rollout-api"], env=env)
    assert new.returncode == old.returncode == 1
    assert "rollout-api needs LORALOOP_BROKER_URL" in new.stderr and "deprecated" not in new.stderr
    note, rest = old.stderr.split("\n", 1)
    assert "'rollout-api' is deprecated" in note and "loraloop serve rollout-api" in note
    assert rest == new.stderr


def test_defaults_have_one_source():
    """The CLI's flags, the job request and `make rollout` all take --seed, --task_seed and the registry from
    loraloop.defaults: the Makefile passes none of them unless told."""
    from typer.main import get_command

    from loraloop import defaults
    from loraloop.cli import app
    from loraloop.service.models import JobRequest

    flags = {p.name: p.default for p in get_command(app).commands["rollout"].params}
    assert (flags["seed"], flags["task_seed"], str(flags["task_registry"])) == (
        defaults.SEED,
        defaults.TASK_SEED,
        defaults.TASK_REGISTRY,
    )
    fields = JobRequest.model_fields
    assert (fields["seed"].default, fields["task_seed"].default, fields["task_registry"].default) == (
        defaults.SEED,
        defaults.TASK_SEED,
        defaults.TASK_REGISTRY,
    )
    make = subprocess.run(
        ["make", "-n", "rollout", "eval", "loop", "task-server"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    assert not re.search(r"--(seed|task_seed|task_registry) ", make)  # (`loop --seeds` are training seeds)
    given = subprocess.run(
        ["make", "-n", "rollout", "SEED=7", "TASK_REGISTRY=configs/tasks/web"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--seed 7" in given and "--task_registry configs/tasks/web" in given


def test_a_path_found_nowhere_names_both_places(tmp_path):
    proc = run_cli(["rollout", "--experiment", "teacher", "--task_registry", "configs/none"], cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    said = "".join(proc.stderr.split())
    assert f"{tmp_path}/configs/none".replace(" ", "") in said and f"{ROOT}/configs/none" in said
    proc = run_cli(["rollout", "--experiment", "teacher", "--config", "my.yaml"], cwd=tmp_path)
    assert proc.returncode == 1 and "experiments file my.yaml does not exist" in " ".join(proc.stderr.split())


def test_a_local_file_wins_over_the_checkouts(tmp_path):
    """A relative path that exists here is this folder's, not the checkout's."""
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "experiments.yaml").write_text("experiments:\n  mine:\n    policy: scripted\n")
    proc = run_cli(["rollout", "--experiment", "teacher", "--sample_size", "1"], cwd=tmp_path)
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 1 and "unknown experiment 'teacher' in configs/experiments.yaml (known: mine)" in said


def test_default_folders_are_the_checkouts_wherever_the_command_runs(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LORALOOP_")}
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            "from loraloop.settings import Settings; s = Settings(); "
            "print(s.store_url, s.model_dir, s.adapters_dir, sep='\\n')",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert shown == [
        f"file://{ROOT}/volumes/store",
        f"{ROOT}/volumes/models/SmolLM2-135M-Instruct",
        f"{ROOT}/volumes/adapters",
    ]


def test_every_command_builds_without_the_training_stack():
    """The rollout image has no torch, transformers, trl, peft, datasets or accelerate (the `train` extra), and its
    workers, APIs and Task Server start through this same CLI: building the command tree must not import them
    (CI's stack once failed when `loraloop agentbench`'s flags came from a module that imported the RL trainer)."""
    code = (
        "import sys\n"
        "for name in ('torch', 'transformers', 'trl', 'peft', 'datasets', 'accelerate'):\n"
        "    sys.modules[name] = None  # `import name` now raises ImportError, as in the rollout image\n"
        "from loraloop.cli import main\n"
        "sys.argv = ['loraloop', 'agentbench', '--help']\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "--rl_iterations" in proc.stdout and "--seeds" in proc.stdout


def test_train_flags_are_the_training_configs_fields(monkeypatch):
    """`loraloop train`'s flags are built from train/config.py (TRL's way): every field with a help is a flag, the
    seed's other spellings parse, bools go either way, and only the flags given reach the trainer (None elsewhere:
    the algorithm's default stands). A flag the algorithm does not take fails naming it, before any training."""
    import dataclasses

    from typer.testing import CliRunner

    import loraloop.cli.train as train_cli
    from loraloop.cli import app
    from loraloop.train.config import CONFIGS

    seen: dict = {}
    monkeypatch.setattr(train_cli, "_train", lambda algorithm, **flags: seen.update(algorithm=algorithm, flags=flags))
    args = ["train", "rl", "--resume", "--sample_size", "3", "--no-scale_rewards", "--base-model", "m", "--lr", "1e-3"]
    args += ["--target_modules", "q_proj", "--target_modules", "v_proj"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    fields = {f.name for config in CONFIGS.values() for f in dataclasses.fields(config) if "help" in f.metadata}
    assert set(seen["flags"]) == fields and {"base_model", "iterations", "whole_episodes", "beta"} <= fields
    given = {k: v for k, v in seen["flags"].items() if v is not None}
    assert given == {
        "resume": True,
        "tasks_per_iteration": 3,
        "scale_rewards": False,
        "base_model": "m",
        "lr": 1e-3,
        "target_modules": ["q_proj", "v_proj"],
    }
    wrong = run_cli(["train", "bc", "--iterations", "3"])
    assert wrong.returncode == 1 and "--iterations do(es) not apply to bc" in " ".join(wrong.stderr.split())
