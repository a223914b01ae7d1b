"""The trainer's own logprobs on publish's verification prompts, saved beside the adapter it trained.

Publish (serve/publish.py) asks vLLM for the logprobs of the likeliest first reply tokens of these prompts under the
new version and compares them with these, computed by the weights the trainer had in memory when it saved the
adapter: a wrong adapter (another folder, another version, a stale copy in vLLM's cache) or a zero one is refused
before it goes live (issue #30 item 3). The prompts travel in the file, so publish asks vLLM exactly these.

No library has this: TRL's vLLM importance-sampling correction compares sampler and trainer logprobs of sampled
tokens during training, not an adapter's identity after a load.
"""

from __future__ import annotations

import json
from pathlib import Path

from loraloop.envs.shell.protocol import INSTRUCTIONS, ONE_SHOT
from loraloop.errors import ConfigError
from loraloop.train.inference import scoring

VERIFY_PROMPTS = [
    [
        {"role": "system", "content": INSTRUCTIONS},
        *ONE_SHOT,
        {"role": "user", "content": "Task: How many lines are in /etc/hostname? Answer with the number only."},
    ],
    [{"role": "user", "content": "Write one shell command that prints the current directory."}],
]
FILE = "trainer_logprobs.json"  # in the adapter folder, beside adapter_config.json
TOP = 64  # the trainer's likeliest first reply tokens kept per prompt (vLLM is asked for 20)


def dataset_prompts(dataset_path: str | None, limit: int = 2) -> list[list[dict]]:
    """Up to `limit` prompts of the JSONL dataset the adapter was trained on, to verify it on; none where the
    training data was not such a file (the RL loop trains from a task registry: JSON, YAML or a folder)."""
    if not dataset_path or not Path(dataset_path).is_file():
        return []
    prompts = []
    with open(dataset_path) as handle:
        for line in handle:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                return []  # not a dataset of rows
            if not isinstance(row, dict) or not isinstance(row.get("prompt"), list):
                return []
            prompts.append(row["prompt"])
            if len(prompts) >= limit:
                break
    return prompts


def verification_prompts(dataset_path: str | None) -> list[list[dict]]:
    """The prompts an adapter trained on `dataset_path` is verified on: the two fixed ones and two of its data."""
    return VERIFY_PROMPTS + dataset_prompts(dataset_path)


def first_token_logprobs(model, tokenizer, prompts: list[list[dict]], top: int = TOP) -> list[dict[str, float]]:
    """For each chat prompt, the logprobs `model` gives its `top` likeliest first reply tokens, keyed
    `token_id:<id>` as vLLM returns them with `return_tokens_as_token_ids`: one forward pass a prompt, no grad,
    the prompt rendered by the tokenizer's chat template with the generation prompt, as vLLM renders it."""
    import torch

    found = []
    with scoring(model):
        for messages in prompts:
            ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
            ids = ids if isinstance(ids, torch.Tensor) else ids["input_ids"]
            logits = model(input_ids=ids.to(model.device)).logits[0, -1].float()
            values, indices = torch.log_softmax(logits, dim=-1).topk(top)
            found.append({f"token_id:{i}": round(v, 6) for i, v in zip(indices.tolist(), values.tolist())})
    return found


def save_trainer_logprobs(model, tokenizer, folder: Path, dataset_path: str | None) -> dict:
    """Write FILE into the adapter folder: the verification prompts and the trainer's logprobs on them (and the
    dtype they were computed in); return what was written."""
    prompts = verification_prompts(dataset_path)
    record = {
        "prompts": prompts,
        "logprobs": first_token_logprobs(model, tokenizer, prompts),
        "dtype": str(model.dtype).removeprefix("torch."),
    }
    (Path(folder) / FILE).write_text(json.dumps(record))
    return record


def read_trainer_logprobs(folder: Path) -> dict | None:
    """FILE of an adapter folder, or None where the adapter was not saved by loraloop's trainers (e.g. one
    downloaded, or trained elsewhere): publish then verifies it against the base model only."""
    path = Path(folder) / FILE
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from exc
    if (
        not isinstance(record, dict)
        or not isinstance(record.get("prompts"), list)
        or not isinstance(record.get("logprobs"), list)
        or len(record["prompts"]) != len(record["logprobs"])
        or not record["prompts"]
    ):
        raise ConfigError(f"{path}: needs `prompts` and `logprobs`, lists of the same non-zero length")
    for n, top in enumerate(record["logprobs"]):
        if not isinstance(top, dict) or not top or not all(isinstance(v, int | float) for v in top.values()):
            raise ConfigError(f"{path}: logprobs[{n}] must be a non-empty object of token -> logprob")
    return record
