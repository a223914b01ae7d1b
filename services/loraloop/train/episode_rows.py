"""BC rows of one episode as one training sequence: the last turn's row already holds every earlier turn
(its prompt is the episode so far), so training on it with every model turn in the loss computes the same
per-token losses as training on each turn's row, from about half the tokens."""

from __future__ import annotations

import json

from loraloop.errors import ConfigError


def _key(messages: list[dict]) -> str:
    return json.dumps(messages, sort_keys=True)


def chain_turns(rows: list[dict]) -> list[list[dict]]:
    """The rows in chains, each an episode's turns in order: a row whose prompt + completion is the start of
    a later row's prompt is that row's earlier turn. Rows are chat rows (prompt and completion message lists)."""
    ends: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        ends.setdefault(_key(row["prompt"] + row["completion"]), []).append(i)
    earlier: dict[int, int] = {}
    claimed: set[int] = set()
    for j, row in enumerate(rows):
        prompt = row["prompt"]
        cuts = [cut for cut in range(len(prompt), 0, -1) if prompt[cut - 1].get("role") == "assistant"]
        for cut in cuts:  # the latest earlier turn that is a row of its own
            free = [i for i in ends.get(_key(prompt[:cut]), []) if i not in claimed and i != j]
            if free:
                claimed.add(free[0])
                earlier[j] = free[0]
                break
    chains = []
    for j in range(len(rows)):
        if j in claimed:
            continue
        chain = [j]
        while chain[0] in earlier:
            chain.insert(0, earlier[chain[0]])
        chains.append([rows[i] for i in chain])
    return chains


def _ids(tokenizer, messages: list[dict], generation_prompt: bool = False) -> list[int]:
    return list(
        tokenizer.apply_chat_template(
            messages, tokenize=True, return_dict=True, add_generation_prompt=generation_prompt
        )["input_ids"]
    )


def episode_sequences(rows: list[dict], tokenizer) -> list[dict]:
    """Tokenized training sequences (`input_ids`, `completion_mask`), one per chain of `chain_turns`, every
    turn's completion in the mask as TRL's prompt-completion rows put it (the chat template's tokens of the
    reply and its end of turn). A chain whose tokens do not extend each other (a template that rewrites
    earlier turns) is trained turn by turn."""
    text = next(
        (n for n, r in enumerate(rows, 1) if not (isinstance(r["prompt"], list) and isinstance(r["completion"], list))),
        None,
    )
    if text is not None:
        raise ConfigError(
            f"whole episodes: row {text} is not a chat row (prompt and completion must be message "
            f"lists); train it turn by turn"
        )
    sequences = []
    for chain in chain_turns(rows):
        turns = [(_ids(tokenizer, r["prompt"], True), _ids(tokenizer, r["prompt"] + r["completion"])) for r in chain]
        full = turns[-1][1]
        if all(full[: len(whole)] == whole and whole[: len(prompt)] == prompt for prompt, whole in turns):
            parts = [turns]
        else:
            parts = [[turn] for turn in turns]
        for part in parts:
            ids = part[-1][1]
            mask = [0] * len(ids)
            for prompt, whole in part:
                mask[len(prompt) : len(whole)] = [1] * (len(whole) - len(prompt))
            sequences.append({"input_ids": ids, "completion_mask": mask})
    return sequences
