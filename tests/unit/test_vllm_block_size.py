"""vLLM CPU's KV cache block (LORALOOP_VLLM_BLOCK_SIZE, serve/vllm_server.command's --block-size): 32 by default, any
multiple of 32 passed through, anything else refused naming the setting (bench/vllm_block_size.py measures why)."""

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from loraloop.serve import vllm_server
from loraloop.settings import Settings


def block_flag(settings: Settings) -> str:
    """The value vLLM's command line gets for --block-size."""
    args, _ = vllm_server.command(settings, Path("m"), None, 8000, "float32", [])
    return args[args.index("--block-size") + 1]


def test_the_default_block_is_32_tokens():
    assert Settings().vllm_block_size == 32 and block_flag(Settings()) == "32"


@given(st.integers(min_value=1, max_value=64))
def test_every_multiple_of_32_reaches_the_command_line(units):
    assert block_flag(Settings(vllm_block_size=32 * units)) == str(32 * units)


@given(st.integers(min_value=-4096, max_value=4096).filter(lambda b: b <= 0 or b % 32))
def test_a_block_that_is_no_positive_multiple_of_32_is_refused_by_name(block):
    with pytest.raises(ValidationError, match="vllm_block_size"):
        Settings(vllm_block_size=block)


def test_the_environment_variable_sets_it(monkeypatch):
    monkeypatch.setenv("LORALOOP_VLLM_BLOCK_SIZE", "64")
    assert block_flag(Settings()) == "64"
