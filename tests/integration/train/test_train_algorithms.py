"""BC, DPO, offline and online GRPO with TRL + PEFT on a tiny random Llama: adapters, curves, checkpoints,
resume, a dataset in S3, rewards from real containers."""

import json
from pathlib import Path

import pytest

from loraloop.train.bc import train_bc
from loraloop.train.config import BCConfig, DPOConfig, GRPOConfig
from loraloop.train.dpo import train_dpo
from loraloop.train.grpo import stored_return_reward, train_grpo


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def prompt(i):
    return [{"role": "system", "content": "Answer with an action."}, {"role": "user", "content": f"Task: t{i}"}]


def test_dpo_trains_an_adapter_and_resumes_from_its_checkpoint(tmp_path, tiny_model):
    rows = [
        {
            "prompt": prompt(i),
            "chosen": [{"role": "assistant", "content": f"Act: answer({i})"}],
            "rejected": [{"role": "assistant", "content": "Act: finish"}],
        }
        for i in range(6)
    ]
    data = write(tmp_path / "dpo.jsonl", rows)
    base = tiny_model
    cfg = DPOConfig(
        base_model=str(base),
        dataset_path=str(data),
        output_dir=str(tmp_path / "out"),
        epochs=2,
        batch_size=2,
        lr=5e-3,
        lora_r=8,
        save_steps=3,
    )
    metrics = train_dpo(cfg)
    out = tmp_path / "out"
    assert (out / "adapter_model.safetensors").is_file() and (out / "loss.png").stat().st_size > 1000
    assert metrics["algorithm"] == "dpo" and metrics["steps"] == 6 and metrics["beta"] == 0.1
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-3", "checkpoint-6"]
    assert list((out / "runs").rglob("events.out.tfevents.*"))  # TensorBoard
    cfg.epochs, cfg.resume = 3, True
    resumed = train_dpo(cfg)
    assert resumed["steps"] == 9  # went on from checkpoint-6, not from zero


def test_grpo_rewards_completions_from_stored_returns(tmp_path, tiny_model):
    returns = {"answer: 1": 1.0, "bash: ls": 0.0}
    assert stored_return_reward(
        [[{"role": "assistant", "content": "Act: answer(1)"}], "Act: answer(2)", "??"],
        [json.dumps(returns)] * 3,
        ["shell"] * 3,
    ) == [1.0, 0.0, -1.0]
    rows = [{"prompt": prompt(i), "action_returns": returns} for i in range(4)]
    data = write(tmp_path / "grpo.jsonl", rows)
    base = tiny_model
    metrics = train_grpo(
        GRPOConfig(
            base_model=str(base),
            dataset_path=str(data),
            output_dir=str(tmp_path / "out"),
            batch_size=4,
            num_generations=4,
            max_completion_length=8,
            lr=1e-3,
            lora_r=8,
        )
    )
    assert (tmp_path / "out" / "adapter_model.safetensors").is_file()
    assert metrics["algorithm"] == "grpo" and metrics["rows"] == 4 and metrics["steps"] >= 1
    history = json.loads((tmp_path / "out" / "training_metrics.json").read_text())
    assert history["num_generations"] == 4


def test_cli_trains_from_a_dataset_in_s3(tmp_path, s3_endpoint, tiny_model):
    import os
    import subprocess
    import sys

    from loraloop.settings import Settings
    from loraloop.store import open_store

    rows = [
        {
            "prompt": prompt(i),
            "chosen": [{"role": "assistant", "content": f"Act: answer({i})"}],
            "rejected": [{"role": "assistant", "content": "Act: finish"}],
        }
        for i in range(4)
    ]
    env = {"LORALOOP_S3_ENDPOINT_URL": s3_endpoint, "LORALOOP_S3_ACCESS_KEY": "any", "LORALOOP_S3_SECRET_KEY": "any"}
    store = open_store(
        "s3://loraloop-train/exports", Settings(**{k.removeprefix("LORALOOP_").lower(): v for k, v in env.items()})
    )
    store.put_bytes("run1/dpo.jsonl", "".join(json.dumps(r) + "\n" for r in rows).encode())
    base = tiny_model
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "loraloop.cli",
            "train",
            "dpo",
            "--base_model",
            str(base),
            "--dataset_path",
            "s3://loraloop-train/exports/run1/dpo.jsonl",
            "--output_dir",
            str(tmp_path / "out"),
            "--epochs",
            "1",
            "--batch_size",
            "2",
            "--beta",
            "0.2",
        ],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    metrics = json.loads((tmp_path / "out" / "training_metrics.json").read_text())
    assert metrics["beta"] == 0.2 and metrics["rows"] == 4 and metrics["dataset_path"].endswith("dataset/dpo.jsonl")


@pytest.mark.usefixtures("docker_ready")
def test_environment_reward_scores_completions_in_real_containers(settings_for):
    from loraloop.task_registry import load_registry
    from loraloop.train.online_grpo import EnvironmentReward

    registry = load_registry("configs/tasks/os")
    task = registry.get("train-count-ext-00000")
    settings = settings_for()
    reward = EnvironmentReward(registry, settings, concurrency=3)
    solve = f"Think: count.\nAct: bash\n```bash\n{task.example.source(task.scripts_dir)}\n```"
    got = reward(
        [[{"role": "assistant", "content": c}] for c in (solve, "Act: answer(-1)", "no idea")], task_id=[task.index] * 3
    )
    assert got == [1.0, 0.0, -1.0]
    stored = list(Path(settings.store_url.removeprefix("file://"), "trajectories", "grpo_online").rglob("*.jsonl"))
    assert len(stored) == 3


@pytest.mark.usefixtures("docker_ready")
def test_online_grpo_trains_with_environment_rewards(tmp_path, settings_for, tiny_model):
    from loraloop.train.config import OnlineGRPOConfig
    from loraloop.train.online_grpo import train_grpo_online

    base = tiny_model
    metrics = train_grpo_online(
        OnlineGRPOConfig(
            base_model=str(base),
            dataset_path="configs/tasks/os",
            subset="train+family:count-ext",
            output_dir=str(tmp_path / "out"),
            batch_size=4,
            num_generations=4,
            max_completion_length=8,
            lr=1e-3,
            lora_r=8,
            epochs=0.25,
        ),
        settings_for(),
    )
    assert (tmp_path / "out" / "adapter_model.safetensors").is_file()
    assert metrics["algorithm"] == "grpo-online" and metrics["rows"] == 8 and metrics["steps"] >= 1
    episodes = list((tmp_path / "store" / "trajectories" / "grpo_online").rglob("*.jsonl"))
    assert len(episodes) >= 4  # every sampled completion was played and stored


def test_train_bc_writes_a_peft_adapter_and_curve(tmp_path, tiny_model):
    rows = [
        {
            "prompt": [{"role": "user", "content": f"Task: count files in /d{i}"}],
            "completion": [{"role": "assistant", "content": f"Act: answer({i})"}],
        }
        for i in range(8)
    ]
    data = tmp_path / "bc.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    base = tiny_model
    metrics = train_bc(
        BCConfig(
            base_model=str(base),
            dataset_path=str(data),
            output_dir=str(tmp_path / "out"),
            epochs=3,
            batch_size=4,
            lr=5e-3,
            lora_r=8,
        )
    )
    out = tmp_path / "out"
    assert (out / "adapter_model.safetensors").is_file() and (out / "loss.png").stat().st_size > 1000
    assert json.loads((out / "adapter_config.json").read_text())["r"] == 8
    assert metrics["steps"] == 6 and metrics["final_loss"] < metrics["first_loss"]
    assert metrics["dataset_digest"] and metrics["backend"] == "trl+peft"
