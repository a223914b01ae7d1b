"""`loraloop models prepare` converts the packaged GGUF once: a folder prepared from the same file is left
alone, however the path to that file was spelled (a virtualenv reached through a link, as worktrees share one)."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loraloop.errors import ConfigError
from loraloop.models.prepare import END_OF_TURN, GEMMA_CHAT_TEMPLATE, MARKER, gguf_path, prepare
from tests.conftest import model_files


def test_a_prepared_folder_is_not_prepared_again_through_a_linked_path(tmp_path):
    source = gguf_path("smollm2-135m")
    (tmp_path / "linked").symlink_to(source.parent)
    out = tmp_path / "model"
    out.mkdir()
    (out / MARKER).write_text(json.dumps({"model": "smollm2-135m", "source": str(tmp_path / "linked" / source.name)}))
    assert prepare("smollm2-135m", out) == out
    assert [p.name for p in out.iterdir()] == [MARKER]  # nothing converted, nothing written


def test_a_folder_prepared_from_another_model_is_refused_untouched(tmp_path):
    out = tmp_path / "SmolLM2-135M-Instruct"
    out.mkdir()
    (out / MARKER).write_text(json.dumps({"model": "smollm2-135m", "source": "/somewhere/SmolLM2.gguf"}))
    (out / "model.safetensors").write_bytes(b"weights")
    with pytest.raises(ConfigError, match=r"holds smollm2-135m, not gemma3-270m.*volumes/models/gemma-3-270m"):
        prepare("gemma3-270m", out)
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "model.safetensors"]
    with pytest.raises(ConfigError, match=r"unknown model 'gemma-9b' \(known: smollm2-135m, gemma3-270m\)"):
        prepare("gemma-9b", tmp_path / "other")


@pytest.fixture(scope="module")
def gemma_turns():
    """SmolLM2's tokenizer (`make model`) carrying the template prepare gives Gemma 3 270M (tokens differ, the
    text is the template's)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_files())
    tokenizer.chat_template = GEMMA_CHAT_TEMPLATE
    return tokenizer


TEXT = st.text(st.characters(codec="ascii", exclude_categories=("Cc",)), min_size=1, max_size=20).filter(str.strip)


@settings(max_examples=40, deadline=None)
@given(st.one_of(st.none(), TEXT), st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=3))
def test_gemmas_turns_put_the_system_in_the_first_user_turn_and_each_reply_extends_its_prompt(
    gemma_turns, system, exchanges
):
    """BC's masks (episode_rows) need the prompt with the generation prompt to be a prefix of the prompt with the
    reply, whatever the turns; the reply ends at `<end_of_turn>`, where vLLM stops."""
    messages = [{"role": "system", "content": system}] if system else []
    for question, reply in exchanges:
        messages.append({"role": "user", "content": question})
        prompt = gemma_turns.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        messages.append({"role": "assistant", "content": reply})
        whole = gemma_turns.apply_chat_template(messages, tokenize=False)
        assert whole.startswith(prompt) and whole[len(prompt) :] == reply.strip() + END_OF_TURN + "\n"
    first_user = whole.split("<start_of_turn>user\n", 2)[1]
    assert first_user.startswith(system + "\n\n" if system else exchanges[0][0].strip())
    assert whole.count("<start_of_turn>") == 2 * len(exchanges) and whole.startswith(gemma_turns.bos_token)
