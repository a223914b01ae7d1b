"""What publish verifies an adapter on: a few prompts of its JSONL dataset, none from a task registry (the RL loop's
training data), which once crashed the RL loop's first publish on a tau2 registry (a JSON document)."""

from __future__ import annotations

import json

from loraloop.train.verify_logprobs import dataset_prompts


def test_prompts_come_from_a_jsonl_dataset_and_never_from_a_task_registry(tmp_path):
    rows = tmp_path / "bc.jsonl"
    rows.write_text(
        "".join(
            json.dumps({"prompt": [{"role": "user", "content": f"q{i}"}], "completion": []}) + "\n" for i in range(3)
        )
    )
    assert dataset_prompts(str(rows)) == [[{"role": "user", "content": "q0"}], [{"role": "user", "content": "q1"}]]
    registry = tmp_path / "mock_base.json"
    registry.write_text(json.dumps({"source": "tau2", "tasks": [{"id": "t"}]}, indent=2))
    assert dataset_prompts(str(registry)) == []
    one_line = tmp_path / "registry.json"
    one_line.write_text(json.dumps({"tasks": []}) + "\n")  # a JSON object, but not a row
    assert dataset_prompts(str(one_line)) == []
    assert dataset_prompts(str(tmp_path / "missing.jsonl")) == [] and dataset_prompts(None) == []
