"""Training loads the model in the dtype LORALOOP_DTYPE (or this CPU) chose, and records it."""

import json

import pytest

from loraloop.hardware import choose_dtype
from loraloop.settings import get_settings


@pytest.mark.parametrize("setting", ["auto", "bfloat16"])
def test_training_runs_in_the_chosen_dtype_and_records_it(setting, monkeypatch, tmp_path, tiny_model):
    """BC on a tiny random Llama: LORALOOP_DTYPE reaches training, and training_metrics.json says
    which dtype the model was trained in (auto: this CPU's choice)."""
    from loraloop.train.bc import train_bc
    from loraloop.train.config import BCConfig

    monkeypatch.setenv("LORALOOP_DTYPE", setting)
    get_settings.cache_clear()
    try:
        rows = [
            {
                "prompt": [{"role": "user", "content": f"Task: count files in /d{i}"}],
                "completion": [{"role": "assistant", "content": f"Act: answer({i})"}],
            }
            for i in range(4)
        ]
        data = tmp_path / "bc.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
        metrics = train_bc(
            BCConfig(
                base_model=str(tiny_model),
                dataset_path=str(data),
                output_dir=str(tmp_path / "out"),
                epochs=1,
                batch_size=4,
                lora_r=4,
            )
        )
    finally:
        get_settings.cache_clear()
    expected = choose_dtype(setting)
    assert metrics["dtype"] == expected and metrics["backend"] == "trl+peft"
    saved = json.loads((tmp_path / "out" / "training_metrics.json").read_text())
    assert saved["dtype"] == expected
