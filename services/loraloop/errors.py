"""Errors that reach users: each names the file, field, value or URL at fault (a URL without its credentials)."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def without_credentials(url: str) -> str:
    """A URL fit to show: user and password dropped."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return urlunsplit(parts._replace(netloc=host + (f":{parts.port}" if parts.port else "")))


class LoraloopError(Exception):
    """A failure the CLI prints as one clear line instead of a traceback."""


class TaskFormatError(LoraloopError):
    """A task file, task or field does not follow the task format."""


class ConfigError(LoraloopError):
    """An experiment, registry or setting is missing or malformed."""


class ServiceUnavailable(LoraloopError):
    """A server the loop needs (vLLM, Redis, S3, Docker) did not answer."""


class StoreUnavailable(ServiceUnavailable):
    """The S3 store did not answer for LORALOOP_STORE_RETRY_S: an HTTP API answers it with 503 naming the store."""


class ModelTimeout(ServiceUnavailable):
    """The model server took longer than LORALOOP_REQUEST_TIMEOUT_S on every try: it answers, but too slowly
    (a long reply queued on a busy server), which is not the same as a server that is down."""


class EnvironmentFailure(LoraloopError):
    """The environment itself failed (container, init script), not the agent."""


class ModelRequestError(LoraloopError):
    """The model server refused a request (HTTP 400: e.g. a prompt longer than its context)."""


class TaskSkipped(LoraloopError):
    """The policy cannot play this task (the scripted teacher, a task without an example): the
    episode is recorded as skipped with this reason, not as a failure."""


class SessionError(LoraloopError):
    """A gateway call its session cannot take (an unknown key, a session that ended, a completion it never made);
    `status` is the HTTP code the gateway answers with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class MacroError(LoraloopError):
    """A macro call with a missing or bad argument, or a macro that cannot go on; the message names what. Raised by
    the kinds' macros (envs/<kind>/macros.py) and agents/macros.py, so it sits here, below both."""
