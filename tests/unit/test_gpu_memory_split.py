"""One GPU shared by vLLM and the trainer (docs/gpu.md, "One GPU"): a trainer share (LORALOOP_TRAIN_GPU_FRACTION) and
vLLM's (VLLM_GPU_MEMORY_UTILIZATION) that add up to more than the card are refused before anything loads, by Settings
(every `loraloop` command, the trainer container's included) and by `make up`'s env check; an empty trainer share,
as .env.example and compose.train.yaml give it, means the whole GPU."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from loraloop.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
HUNDREDTHS = st.integers(min_value=1, max_value=100)


@given(HUNDREDTHS, HUNDREDTHS)
def test_a_split_is_taken_exactly_when_the_two_shares_fit_on_one_card(served, train):
    """Boundaries included: 0.5 + 0.5 fits, 0.5 + 0.51 does not, 1.0 with any trainer share does not."""
    if served + train <= 100:
        settings = Settings(vllm_gpu_memory_utilization=served / 100, train_gpu_fraction=train / 100)
        assert (settings.vllm_gpu_memory_utilization, settings.train_gpu_fraction) == (served / 100, train / 100)
    else:
        with pytest.raises(ValidationError) as refused:
            Settings(vllm_gpu_memory_utilization=served / 100, train_gpu_fraction=train / 100)
        message = str(refused.value)
        assert "LORALOOP_TRAIN_GPU_FRACTION" in message and "VLLM_GPU_MEMORY_UTILIZATION" in message
        assert f"= {(served + train) / 100:.2f} of one GPU" in message


@given(st.text(alphabet=" \t", max_size=3))
def test_an_empty_trainer_share_is_the_whole_gpu_beside_any_vllm_share(blank):
    assert Settings(vllm_gpu_memory_utilization=1.0, train_gpu_fraction=blank).train_gpu_fraction is None


def test_vllms_share_is_read_under_compose_s_name_too(monkeypatch):
    monkeypatch.delenv("LORALOOP_VLLM_GPU_MEMORY_UTILIZATION", raising=False)
    monkeypatch.setenv("VLLM_GPU_MEMORY_UTILIZATION", "0.35")
    monkeypatch.setenv("LORALOOP_TRAIN_GPU_FRACTION", "0.6")
    assert (Settings().vllm_gpu_memory_utilization, Settings().train_gpu_fraction) == (0.35, 0.6)
    monkeypatch.setenv("LORALOOP_TRAIN_GPU_FRACTION", "0.7")
    with pytest.raises(ValidationError, match="1.05 of one GPU"):
        Settings()


def test_the_example_env_file_is_read_whole(tmp_path, monkeypatch):
    """`make env` writes .env from .env.example; every `loraloop` command run beside it reads it. Its empty
    LORALOOP_TRAIN_GPU_FRACTION= once failed every one of them ('' is not a number)."""
    shutil.copy(ROOT / ".env.example", tmp_path / ".env")
    monkeypatch.chdir(tmp_path)
    for name in ("LORALOOP_TRAIN_GPU_FRACTION", "LORALOOP_VLLM_GPU_MEMORY_UTILIZATION", "VLLM_GPU_MEMORY_UTILIZATION"):
        monkeypatch.delenv(name, raising=False)
    settings = Settings()
    assert settings.train_gpu_fraction is None and settings.vllm_gpu_memory_utilization == 0.9


def env_check(tmp_path: Path, lines: list[str]) -> subprocess.CompletedProcess:
    """`scripts/env.sh check` (what `make up` and `make up-lora` run first) on an env file with these lines."""
    env_file = tmp_path / "split.env"
    env_file.write_text(
        "MINIO_ROOT_PASSWORD=a-password-of-mine\nTASK_SERVER_TOKEN=0123456789abcdef\n" + "\n".join(lines)
    )
    return subprocess.run(
        ["bash", "scripts/env.sh", "check", str(env_file)], cwd=ROOT, capture_output=True, text=True, timeout=30
    )


@pytest.mark.parametrize(
    "lines",
    [
        ["VLLM_GPU_MEMORY_UTILIZATION=0.35", "LORALOOP_TRAIN_GPU_FRACTION=0.6"],  # docs/gpu.md's 80 GB row
        ["VLLM_GPU_MEMORY_UTILIZATION=0.45", "LORALOOP_TRAIN_GPU_FRACTION=0.5"],  # its 24 GB row
        ["VLLM_GPU_MEMORY_UTILIZATION=0.5", "LORALOOP_TRAIN_GPU_FRACTION=0.5"],  # exactly the card
        ["VLLM_GPU_MEMORY_UTILIZATION=0.9", "LORALOOP_TRAIN_GPU_FRACTION="],  # one at a time
        ["LORALOOP_TRAIN_GPU_FRACTION=0.1"],  # vLLM's 0.9 default + 0.1
        ['VLLM_GPU_MEMORY_UTILIZATION="0.4"  # mine', "LORALOOP_TRAIN_GPU_FRACTION=0.6"],  # quoted, commented
    ],
)
def test_make_up_takes_a_split_that_fits(tmp_path, lines):
    proc = env_check(tmp_path, lines)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        (["VLLM_GPU_MEMORY_UTILIZATION=0.5", "LORALOOP_TRAIN_GPU_FRACTION=0.51"], "= 1.01 of one GPU"),
        (["LORALOOP_TRAIN_GPU_FRACTION=0.2"], "VLLM_GPU_MEMORY_UTILIZATION 0.9 = 1.10"),  # vLLM's default share
        (
            ["VLLM_GPU_MEMORY_UTILIZATION=0.3", "LORALOOP_TRAIN_GPU_FRACTION=0.6", "LORALOOP_TRAIN_GPU_FRACTION=0.8"],
            "0.8",
        ),
        (["LORALOOP_TRAIN_GPU_FRACTION=half"], "LORALOOP_TRAIN_GPU_FRACTION='half' must be numbers"),
    ],
)
def test_make_up_refuses_a_split_that_cannot_fit_and_says_which(tmp_path, lines, said):
    proc = env_check(tmp_path, lines)
    assert proc.returncode != 0 and said in proc.stderr and "split.env" in proc.stderr


def test_training_is_refused_in_one_line_before_it_reads_a_dataset_or_loads_a_model(tmp_path):
    """As the trainer container gets them (compose.train.yaml passes VLLM_GPU_MEMORY_UTILIZATION on)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LORALOOP_VLLM_GPU_MEMORY_UTILIZATION": "0.5"}
    proc = subprocess.run(
        [sys.executable, "-m", "loraloop.cli", "train", "bc", "--dataset_path", str(tmp_path / "absent.jsonl")],
        env=env | {"LORALOOP_TRAIN_GPU_FRACTION": "0.6", "PYTHONPATH": str(ROOT / "services")},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = " ".join((proc.stdout + proc.stderr).split())  # Rich folds the line at the terminal's width
    assert proc.returncode == 1 and "= 1.10 of one GPU" in said and "Traceback" not in said
    assert "absent.jsonl" not in said  # refused before the dataset was looked at
