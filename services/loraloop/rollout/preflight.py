"""Checks before a rollout starts, so a missing server is one clear line, not N failed episodes; and the
adapter version a job samples with, fixed once for all its episodes."""

from __future__ import annotations

from dataclasses import replace

import httpx

from loraloop.errors import ConfigError, ServiceUnavailable
from loraloop.rollout.endpoints import endpoint
from loraloop.store import adapters, open_store


def served_models(vllm_url: str, api_key: str = "EMPTY", timeout: float = 10.0) -> list[dict]:
    """The /v1/models list of an OpenAI-compatible server (adapters carry `parent`)."""
    try:
        response = httpx.get(
            f"{vllm_url.rstrip('/')}/models", timeout=timeout, headers={"Authorization": f"Bearer {api_key}"}
        )
        response.raise_for_status()
    except httpx.HTTPError as exc:
        raise ServiceUnavailable(f"model server unreachable at {vllm_url} ({type(exc).__name__})") from exc
    return response.json().get("data", [])


def require_model(vllm_url: str, model: str, api_key: str = "EMPTY") -> None:
    """Fail naming the URL when the server is down or does not serve `model`."""
    names = [m["id"] for m in served_models(vllm_url, api_key)]
    if model not in names:
        hint = (
            "; an adapter version is served as <name>-vK: publish it again or run `loraloop adapters sync`"
            if adapters.parse_served(model)
            else ""
        )
        raise ServiceUnavailable(f"model {model!r} is not served at {vllm_url} (served: {', '.join(names)}){hint}")


def require_redis(url: str) -> None:
    """Fail naming the URL when the Celery broker does not answer."""
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=3).ping()
    except redis.RedisError as exc:
        raise ServiceUnavailable(f"broker unreachable at {url} ({type(exc).__name__})") from exc


def pin_adapters(specs: list, settings) -> list:
    """The specs with every adapter model pinned to one version: a bare adapter name becomes the version
    published last (`<name>-vK`, store.adapters.resolve), and each spec of an adapter model carries that
    version's name, version and digest (`adapter`). Resolved once, so every episode of a job samples the
    same version; base models and adapters the store does not hold are left as they are."""
    store = open_store(settings=settings)
    pinned: dict[str, tuple[str, dict | None]] = {}
    for model in sorted({s.model for s in specs if s.policy == "openai" and s.model}):
        found = adapters.resolve(store, model)
        if found is None:
            pinned[model] = (model, None)
            continue
        name, version = found
        digest = adapters.read_metadata(store, name, version).get("weights_sha256")
        pinned[model] = (adapters.served_name(name, version), {"name": name, "version": version, "digest": digest})
    return [replace(s, model=pinned[s.model][0], adapter=pinned[s.model][1]) if s.model in pinned else s for s in specs]


def check_servers(specs: list, settings) -> list:
    """Check every server a planned rollout needs before its first episode starts: what each task
    kind needs (the bundled sites, say), every worker's model server for its model, the broker. A manager's
    server is not checked: when it does not answer, its episodes go on with the worker alone.

    Returns the specs with their adapters pinned (pin_adapters): run those. An adapter version the
    model server does not serve (retired, or never loaded) fails here, naming it and the server."""
    from collections import defaultdict

    from loraloop.kinds.registry import env_kind
    from loraloop.task_registry import shared_registry

    by_kind = defaultdict(list)
    for spec in specs:
        task = shared_registry(spec.task_registry).get(spec.task_id)
        by_kind[task.env].append(task)
    for name, tasks in by_kind.items():
        env_kind(name).envs.preflight(tasks, settings)
    specs = pin_adapters(specs, settings)
    for url, key_env, model in sorted(
        {
            (s.model_url or "", s.api_key_env or "", s.model or settings.base_model_name)
            for s in specs
            if s.policy == "openai"
        }
    ):
        base_url, key = endpoint(url or None, key_env or None, settings)
        require_model(base_url, model, key)
    for manager in {(s.manager["url"], s.manager["api_key_env"]) for s in specs if s.manager}:
        endpoint(*manager, settings)  # its key is set (ConfigError naming the variable otherwise)
    if settings.broker_url:
        require_redis(settings.broker_url)
    return specs


def require_free_port(host: str, port: int) -> None:
    """Fail naming host:port when a server cannot listen there (in use, or not an address of this
    machine), before any banner says it serves; bound as uvicorn binds it (SO_REUSEADDR)."""
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
