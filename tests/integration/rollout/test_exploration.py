"""verify-exploration on the real vLLM CPU server: two temperatures, two stored trajectories that differ."""

import json

import pytest

from tests.helpers import run_cli

VERIFY = [
    "verify-exploration",
    "--experiment",
    "smollm_zero",
    "--task_registry",
    "configs/tasks/os",
    "--task_seed",
    "123",
    "--temperature_a",
    "0.0",
    "--temperature_b",
    "0.7",
    "--compare_steps",
    "3",
]


@pytest.mark.usefixtures("docker_ready")
def test_two_temperatures_explore_on_vllm(tmp_path, vllm_url):
    proc = run_cli(
        VERIFY + ["--task", "test-files-00000"],
        {"LORALOOP_STORE_URL": f"file://{tmp_path}", "LORALOOP_VLLM_URL": vllm_url},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "exploration OK: action sequences differ at step" in proc.stdout
    files = sorted((tmp_path / "trajectories" / "smollm_zero").rglob("*.jsonl"))
    starts = [json.loads(f.read_text().splitlines()[0]) for f in files]
    assert sorted(s["worker_temperature"] for s in starts) == [0.0, 0.7]
    assert {s["seed"] for s in starts} == {123} and {s["task_id"] for s in starts} == {"test-files-00000"}
