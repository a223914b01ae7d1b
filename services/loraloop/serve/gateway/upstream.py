"""The gateway's vLLM: which models it serves, the adapter version each stands for, and the HTTP client to it."""

from __future__ import annotations

import time

import httpx

from loraloop.errors import ConfigError, SessionError
from loraloop.settings import Settings
from loraloop.store import adapters
from loraloop.store.backends import Store
from loraloop.store.records import Adapter

REFRESH_S = 2.0  # an unknown model name asks vLLM again at most this often (a bad name cannot flood it)


class Upstream:
    """vLLM behind the gateway: an async client, its served models (asked again when a name is new) and the
    adapter provenance of each (name, version, digest from the store; versions never change once published)."""

    def __init__(self, settings: Settings, store: Store) -> None:
        self.url = settings.vllm_url.rstrip("/")
        self.base_model = settings.base_model_name
        self.store = store
        self.client = httpx.AsyncClient(
            base_url=self.url,
            timeout=settings.request_timeout_s,
            headers={"Authorization": f"Bearer {settings.vllm_api_key}"},
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
        )
        self.served: set[str] = set()
        self.asked_at = 0.0
        self.adapters: dict[str, Adapter | None] = {}

    async def models(self) -> dict:
        """vLLM's /models reply, less each model's `root`: the folder vLLM loaded it from, a host path no client
        needs (the id, the parent model and the rest pass through)."""
        try:
            response = await self.client.get("/models")
        except httpx.HTTPError as exc:
            raise SessionError(f"vLLM unreachable at {self.url} ({type(exc).__name__})", 502) from exc
        if response.status_code != 200:
            raise SessionError(f"vLLM at {self.url} answered /models with HTTP {response.status_code}", 502)
        payload = response.json()
        for entry in payload.get("data", ()):
            entry.pop("root", None)
        self.served = {entry["id"] for entry in payload.get("data", ())}
        self.asked_at = time.monotonic()
        return payload

    async def check(self, model: str) -> Adapter | None:
        """The adapter version a served model name stands for (None: the base model); 404 naming the served ones
        when vLLM does not serve it."""
        if model not in self.served and time.monotonic() - self.asked_at > REFRESH_S:
            await self.models()
        if model not in self.served:
            raise SessionError(
                f"model {model!r} is not served by the gateway's vLLM (served: "
                f"{', '.join(sorted(self.served)) or 'none'}); publish it first (`loraloop publish`)",
                404,
            )
        if model not in self.adapters:
            self.adapters[model] = self.provenance(model)
        return self.adapters[model]

    def provenance(self, model: str) -> Adapter | None:
        """A served name's adapter: `<name>-v<k>` with its digest where the store holds that version, a name of
        another form as it is, None for the base model."""
        if model == self.base_model:
            return None
        parsed = adapters.parse_served(model)
        if parsed is None:
            return Adapter(name=model)
        name, version = parsed
        try:
            digest = adapters.read_metadata(self.store, name, version).get("weights_sha256")
        except ConfigError:  # published elsewhere: the version is known, its digest is not
            digest = None
        return Adapter(name=name, version=version, digest=digest)

    async def aclose(self) -> None:
        """Close the connections to vLLM."""
        await self.client.aclose()
