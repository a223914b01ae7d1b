"""Served adapter names: `<name>-vK` both ways, and which version a rollout's model stands for."""

import pytest

from loraloop.errors import ConfigError
from loraloop.store import FileStore, adapters


def test_served_names_round_trip_and_resolve_to_stored_versions(tmp_path):
    assert adapters.served_name("smollm.bc-x", "v12") == "smollm.bc-x-v12"
    assert adapters.parse_served("smollm.bc-x-v12") == ("smollm.bc-x", "v12")
    assert adapters.parse_served("smollm_bc") is None and adapters.parse_served("SmolLM2-135M-Instruct") is None
    store = FileStore(tmp_path / "store")
    folder = tmp_path / "lora"
    folder.mkdir()
    (folder / "adapter_config.json").write_text('{"r": 4}')
    (folder / "adapter_model.safetensors").write_bytes(b"weights")
    with pytest.raises(ConfigError, match=r"'a-v2' must not end in '-v<number>'"):
        adapters.upload(store, "a-v2", folder, {})
    assert [adapters.upload(store, "a", folder, {}) for _ in range(3)] == ["v1", "v2", "v3"]
    assert adapters.resolve(store, "a") == ("a", "v3")  # a bare name: the newest, until one is marked served
    adapters.mark_served(store, "a", "v2")
    assert adapters.resolve(store, "a") == ("a", "v2") and adapters.resolve(store, "a-v1") == ("a", "v1")
    assert adapters.resolve(store, "a-v9") is None and adapters.resolve(store, "SmolLM2-135M-Instruct") is None
