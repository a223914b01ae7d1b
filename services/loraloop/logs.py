"""Structured logs: every line carries key=value context (run, episode, step)."""

from __future__ import annotations

import logging
import os


class ContextLogger(logging.LoggerAdapter):
    """A logger whose lines end with the context it was bound to, as key=value pairs."""

    def process(self, msg, kwargs):
        fields = {**self.extra, **kwargs.pop("fields", {})}
        suffix = " ".join(f"{k}={v}" for k, v in fields.items())
        return (f"{msg} {suffix}" if suffix else msg), kwargs

    def bind(self, **context) -> ContextLogger:
        """A logger with more context."""
        return ContextLogger(self.logger, {**(self.extra or {}), **context})


def get_logger(name: str, **context) -> ContextLogger:
    """A context logger for a module; level from LORALOOP_LOG_LEVEL (default WARNING)."""
    if not logging.getLogger("loraloop").handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root = logging.getLogger("loraloop")
        root.addHandler(handler)
        root.setLevel(os.environ.get("LORALOOP_LOG_LEVEL", "WARNING").upper())
        root.propagate = False
    return ContextLogger(logging.getLogger(name), context)
