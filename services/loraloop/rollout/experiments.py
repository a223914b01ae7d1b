"""Experiment definitions (configs/experiments.yaml): which policy and model a mode uses."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from loraloop.errors import ConfigError
from loraloop.paths import locate

POLICIES = ("openai", "scripted")
PROTOCOLS = ("text", "tools")


@dataclass(frozen=True)
class Experiment:
    """A named rollout mode: the policy kind, the served model name and episode limits."""

    name: str
    policy: str = "openai"
    model: str | None = None
    max_steps: int = 8
    temperature: float = 0.0
    protocol: str = "text"
    screenshots: bool = False  # web: a PNG of every page the model saw, stored with the trajectory
    description: str = ""


def load_experiments(path: str | Path) -> dict[str, Experiment]:
    """Read every experiment in the file, failing on the first bad field with its name."""
    path = locate(path, "experiments file")
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except OSError as exc:
        raise ConfigError(f"experiments file {path} cannot be read ({exc.strerror})") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from exc
    defaults = doc.get("defaults", {}) or {}
    raw = doc.get("experiments")
    if not isinstance(raw, dict) or not raw:
        raise ConfigError(f"{path}: field 'experiments' must map names to settings")
    known = set(Experiment.__dataclass_fields__) - {"name"}
    out = {}
    for name, fields in raw.items():
        fields = {**defaults, **(fields or {})}
        unknown = set(fields) - known
        if unknown:
            raise ConfigError(f"{path}: experiments.{name} has unknown field(s) {', '.join(sorted(unknown))}")
        if fields.get("policy", "openai") not in POLICIES:
            raise ConfigError(f"{path}: experiments.{name}.policy must be one of {POLICIES}, got {fields['policy']!r}")
        if fields.get("protocol", "text") not in PROTOCOLS:
            raise ConfigError(f"{path}: experiments.{name}.protocol must be one of {PROTOCOLS}, "
                              f"got {fields['protocol']!r}")
        if not isinstance(fields.get("max_steps", 8), int) or fields.get("max_steps", 8) < 1:
            raise ConfigError(f"{path}: experiments.{name}.max_steps must be a positive integer")
        out[name] = Experiment(name=name, **fields)
    return out


def get_experiment(path: str | Path, name: str) -> Experiment:
    """The named experiment, or an error listing the known names."""
    experiments = load_experiments(path)
    if name not in experiments:
        raise ConfigError(f"unknown experiment {name!r} in {path} (known: {', '.join(sorted(experiments))})")
    return experiments[name]
