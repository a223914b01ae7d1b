"""Training refuses bad datasets before loading a model, naming file, line and field; bad flags are named."""

import json

import pytest

from loraloop.errors import ConfigError
from loraloop.train.bc import train_bc
from loraloop.train.config import BCConfig, DPOConfig, GRPOConfig
from loraloop.train.dpo import train_dpo
from loraloop.train.grpo import train_grpo
from tests.helpers import run_cli


def test_empty_or_wrong_dataset_fails_before_loading_a_model(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ConfigError, match="is empty"):
        train_bc(BCConfig(base_model="/nonexistent", dataset_path=str(empty), output_dir=str(tmp_path)))
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text('{"prompt": "x", "chosen": "y"}\n')
    with pytest.raises(ConfigError, match=r"wrong.jsonl:1: missing field\(s\) completion"):
        train_bc(BCConfig(base_model="/nonexistent", dataset_path=str(wrong), output_dir=str(tmp_path)))


def test_sync_rejects_a_pause_under_a_second():
    """`--every 0` would spin against vLLM and a negative pause would crash the service: named instead."""
    proc = run_cli(["adapters", "sync", "--every", "0"], timeout=120)
    assert proc.returncode == 2 and "--every" in proc.stderr and "greater than or equal to 1" in proc.stderr, (
        proc.stderr
    )


def test_wrongly_shaped_preference_data_fails_naming_file_and_line(tmp_path):
    prompt = [{"role": "user", "content": "Task: t0"}]
    data = tmp_path / "dpo.jsonl"
    data.write_text(f'{{"prompt": {json.dumps(prompt)}, "chosen": []}}\n')
    with pytest.raises(ConfigError, match=r"dpo.jsonl:1: missing field\(s\) rejected"):
        train_dpo(DPOConfig(base_model="/nonexistent", dataset_path=str(data), output_dir=str(tmp_path)))
    data = tmp_path / "grpo.jsonl"
    data.write_text(f'{{"prompt": {json.dumps(prompt)}}}\n')
    with pytest.raises(ConfigError, match=r"grpo.jsonl:1: missing field\(s\) action_returns"):
        train_grpo(GRPOConfig(base_model="/nonexistent", dataset_path=str(data), output_dir=str(tmp_path)))
