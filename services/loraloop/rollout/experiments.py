"""Experiment definitions (configs/experiments.yaml): the worker, the manager and the HALO orchestrator's parts.

An experiment names its worker (an OpenAI-compatible URL and model, a published adapter, local transformers,
or the scripted teacher), its manager (off, or a model and URL), whether the Verified Action Cache, macros
and recovery are on, and its episode limits. The file is validated as a whole: an unknown key or a bad value
fails naming its path (`experiments.smol_hierarchy.manager.url: ...`).

The short form of experiments written before workers had their own block (`policy: openai`, `model: X`)
still reads: it is the worker `{backend: policy, model: X}`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from loraloop.errors import ConfigError
from loraloop.paths import locate

POLICIES = ("openai", "local", "scripted")
PROTOCOLS = ("text", "tools")


class Strict(BaseModel):
    """A block of the file: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Worker(Strict):
    """Who acts: `openai` (any OpenAI-compatible server; `url` empty: the stack's vLLM, LORALOOP_VLLM_URL),
    `local` (transformers in the worker process; `model` a folder or hub name, empty: LORALOOP_MODEL_DIR)
    or `scripted` (the task kind's teacher). `adapter` is a published adapter's name, served as the model.
    `api_key_env` names the environment variable holding the server's key (OPENAI_API_KEY): the key itself
    never enters the file, the job or the records."""

    backend: Literal["openai", "local", "scripted"] = "openai"
    model: str | None = None
    url: str | None = None
    adapter: str | None = None
    api_key_env: str | None = None

    @model_validator(mode="after")
    def _one_model(self) -> Worker:
        if self.adapter and self.model:
            raise ValueError("give the worker a model or an adapter, not both (an adapter is served as its model)")
        if self.backend == "scripted" and (self.model or self.url or self.adapter):
            raise ValueError("a scripted worker takes no model, url or adapter")
        return self


class Manager(Strict):
    """The model that gates the worker: a warm start on the first `warm_start_steps` steps, then only when a
    gate fires (agents/gates.py; `error_streak` consecutive errors is one). `url` empty: the stack's vLLM."""

    model: str
    url: str | None = None
    api_key_env: str | None = None
    warm_start_steps: int = Field(1, ge=0)
    error_streak: int = Field(3, ge=2)


class Experiment(Strict):
    """A named rollout mode. `policy` and `model` are what the worker resolves to (the backend, and the served
    model name: the adapter's where one is named), kept for the code that only needs those."""

    model_config = ConfigDict(
        extra="forbid", frozen=False
    )  # not frozen: the worker's short form is resolved after validation

    name: str
    worker: Worker | None = None
    policy: Literal["openai", "local", "scripted"] | None = None  # short form of worker.backend
    model: str | None = None  # short form of worker.model
    manager: Manager | None = None
    vac: bool = False
    macros: bool = False
    recovery: bool = False
    recovery_patience: int = Field(3, ge=2, description="steps without progress before a recovery action")
    max_steps: int = Field(8, ge=1)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    protocol: Literal["text", "tools"] = "text"
    screenshots: bool = False  # web: a PNG of every page the model saw, stored with the trajectory
    description: str = ""

    @field_validator("manager", mode="before")
    @classmethod
    def _off(cls, value):
        """`manager: off` (YAML reads it as False) and `manager: null` both mean no manager."""
        return None if value in (False, None, "off") else value

    @model_validator(mode="after")
    def _resolve_worker(self) -> Experiment:
        if self.worker is not None and (self.policy is not None or self.model is not None):
            raise ValueError("give either a worker block or the short form policy/model, not both")
        if self.worker is None:
            self.worker = Worker(backend=self.policy or "openai", model=self.model)
        self.policy = self.worker.backend
        self.model = self.worker.adapter or self.worker.model
        if self.policy == "local" and self.protocol != "text":
            raise ValueError("the local backend speaks the text protocol only")
        return self

    @property
    def resolved(self) -> Worker:
        """The worker the experiment runs (its short form resolved by validation, which every loaded one passed)."""
        if self.worker is None:
            raise ValueError("an experiment's worker is resolved when it is validated")
        return self.worker

    @property
    def halo(self) -> bool:
        """True when any part of the HALO orchestrator is on (else the worker acts alone)."""
        return bool(self.manager or self.vac or self.macros or self.recovery)


def error_lines(path: Path, exc: ValidationError, prefix: tuple = ()) -> str:
    """Each validation error as `path: experiments.<name>.<key path>: message`, one a line."""
    lines = []
    for err in exc.errors():
        where = ".".join(str(part) for part in (*prefix, *err["loc"]))
        lines.append(f"{path}: {where}: {err['msg'].removeprefix('Value error, ')}")
    return "\n".join(lines)


def load_experiments(path: str | Path) -> dict[str, Experiment]:
    """Read and validate every experiment in the file; a bad key or value fails naming its path."""
    path = locate(path, "experiments file")
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except OSError as exc:
        raise ConfigError(f"experiments file {path} cannot be read ({exc.strerror})") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(doc, dict) or set(doc) - {"defaults", "experiments"}:
        raise ConfigError(f"{path}: the file holds `defaults` and `experiments` only")
    defaults = doc.get("defaults") or {}
    raw = doc.get("experiments")
    if not isinstance(raw, dict) or not raw or not isinstance(defaults, dict):
        raise ConfigError(f"{path}: field 'experiments' must map names to settings")
    out = {}
    for name, fields in raw.items():
        if fields is not None and not isinstance(fields, dict):
            raise ConfigError(f"{path}: experiments.{name}: must map keys to values")
        try:
            out[name] = Experiment(name=name, **{**defaults, **(fields or {})})
        except ValidationError as exc:
            raise ConfigError(error_lines(path, exc, ("experiments", name))) from exc
        except TypeError as exc:  # a key that is not a string
            raise ConfigError(f"{path}: experiments.{name}: {exc}") from exc
    return out


def get_experiment(path: str | Path, name: str) -> Experiment:
    """The named experiment, or an error listing the known names."""
    experiments = load_experiments(path)
    if name not in experiments:
        raise ConfigError(f"unknown experiment {name!r} in {path} (known: {', '.join(sorted(experiments))})")
    return experiments[name]
