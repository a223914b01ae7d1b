"""The trainers by algorithm name, one training run from the flags given, and inputs fetched from a store URL."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from urllib.parse import urlparse

from loraloop.defaults import TASK_REGISTRY
from loraloop.errors import ConfigError
from loraloop.orchestrator import run_rl
from loraloop.settings import Settings
from loraloop.train.bc import train_bc
from loraloop.train.config import CONFIGS
from loraloop.train.dpo import train_dpo
from loraloop.train.grpo import train_grpo
from loraloop.train.online_grpo import train_grpo_online

TRAINERS = {
    name: (CONFIGS[name], trainer)
    for name, trainer in (
        ("bc", train_bc),
        ("dpo", train_dpo),
        ("grpo", train_grpo),
        ("grpo-online", train_grpo_online),
        ("rl", run_rl),
    )
}
ON_TASKS = ("grpo-online", "rl")  # trained on a task registry, not a dataset file


def fetch_dataset(location: str, output_dir: Path, settings: Settings) -> str:
    """A local path for the dataset: a plain path as is, a file:// or s3:// object copied next to the output."""
    from loraloop.store import open_store

    parsed = urlparse(location)
    if parsed.scheme in ("", "file") and not location.startswith("file://"):
        return location
    folder, _, name = location.rstrip("/").rpartition("/")
    if not name or folder.endswith(":/"):
        raise ConfigError(f"--dataset_path {location!r} must name a file: s3://BUCKET/PATH/NAME.jsonl")
    store = open_store(folder, settings)
    try:
        data = store.get_bytes(name)
    except FileNotFoundError as exc:
        raise ConfigError(f"--dataset_path {location}: no such object") from exc
    local = output_dir / "dataset" / name
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_bytes(data)
    return str(local)


def run_training(algorithm: str, settings: Settings, overrides: dict) -> tuple[Path, dict]:
    """Train one adapter: the algorithm's config (train/config.py) with only the flags given (`overrides`, the
    config's field names) changed.

    Defaults: the dataset volumes/datasets/ALGO.jsonl (grpo-online, rl: the bundled task registry), the
    output volumes/checkpoints/ALGO_lora, the base model LORALOOP_MODEL_DIR. A flag the algorithm does
    not take fails naming it. Returns the output folder and the training metrics.
    """
    if algorithm not in TRAINERS:
        raise ConfigError(f"train: algorithm must be one of {', '.join(TRAINERS)}, got {algorithm!r}")
    config_class, trainer = TRAINERS[algorithm]
    given = {k: v for k, v in overrides.items() if v is not None}
    unknown = sorted(set(given) - {f.name for f in dataclasses.fields(config_class)})
    if unknown:
        raise ConfigError(f"train {algorithm}: --{', --'.join(unknown)} do(es) not apply to {algorithm}")
    output = Path(given.pop("output_dir", None) or f"volumes/checkpoints/{algorithm}_lora")
    default = TASK_REGISTRY if algorithm in ON_TASKS else f"volumes/datasets/{algorithm}.jsonl"
    data = fetch_dataset(given.pop("dataset_path", None) or default, output, settings)
    base_model = given.pop("base_model", None) or str(settings.model_dir)
    cfg = config_class(base_model=base_model, dataset_path=data, output_dir=str(output), **given)
    return output, trainer(cfg)
