"""When loraloop's vLLM CPU server runs its model in the engine's process, pinned (serve/vllm_server.pinned_cores):
only for an explicit core list, and never against a caller's own VLLM_ENABLE_V1_MULTIPROCESSING."""

from pathlib import Path

import pytest

from loraloop.serve import vllm_server
from loraloop.settings import Settings


@pytest.mark.parametrize(
    ("spec", "cores"),
    [
        ("0", {0}),
        ("1", {1}),
        ("0-1", {0, 1}),
        ("0,2-3", {0, 2, 3}),
        ("auto", None),
        ("nobind", None),
        ("", None),
        ("0-", None),
        ("a", None),
    ],
)
def test_an_explicit_core_list_pins_the_server_and_anything_else_does_not(monkeypatch, spec, cores):
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", spec)
    _, env = vllm_server.command(Settings(), Path("m"), None, 8000, "bfloat16", [])
    assert vllm_server.pinned_cores(env) == cores
    assert env.get("VLLM_ENABLE_V1_MULTIPROCESSING") == ("0" if cores is not None else None)


def test_the_callers_multiprocessing_setting_is_kept_and_nothing_is_pinned(monkeypatch):
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1")
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "0")
    _, env = vllm_server.command(Settings(), Path("m"), None, 8000, "bfloat16", [])
    assert env["VLLM_ENABLE_V1_MULTIPROCESSING"] == "1" and vllm_server.pinned_cores(env) is None
