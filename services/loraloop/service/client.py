"""How the CLI reaches jobs: through the rollout API (LORALOOP_API_URL) or the broker directly."""
from __future__ import annotations

from typing import Any, Protocol

import httpx

from loraloop.errors import ConfigError, LoraloopError, ServiceUnavailable
from loraloop.service.jobs import JobBook, JobRequest, cancel, submit
from loraloop.settings import Settings


class Jobs(Protocol):
    """Submit, follow, list and cancel jobs."""

    def submit(self, request: JobRequest) -> dict[str, Any]: ...

    def status(self, run_id: str) -> dict[str, Any]: ...

    def list(self, limit: int = 50) -> list[dict[str, Any]]: ...

    def cancel(self, run_id: str) -> dict[str, Any]: ...


class ApiJobs:
    """Jobs through the rollout API's HTTP routes; its errors come back as one line with the detail."""

    def __init__(self, url: str, token: str = "") -> None:
        self.url = url.rstrip("/")
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=self.url, headers=headers, timeout=60)

    def _call(self, method: str, path: str, **kwargs) -> Any:
        try:
            response = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ServiceUnavailable(f"rollout API unreachable at {self.url} ({type(exc).__name__})") from exc
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail")
            except ValueError:
                detail = response.text[:300]
            raise LoraloopError(f"rollout API {method} {path}: HTTP {response.status_code}: {detail}")
        return response.json()

    def submit(self, request: JobRequest) -> dict[str, Any]:
        """POST /api/jobs."""
        return self._call("POST", "/api/jobs", json=request.model_dump())

    def status(self, run_id: str) -> dict[str, Any]:
        """GET /api/jobs/{run_id}."""
        return self._call("GET", f"/api/jobs/{run_id}")

    def list(self, limit: int = 50) -> list[dict[str, Any]]:
        """GET /api/jobs."""
        return self._call("GET", "/api/jobs", params={"limit": limit})

    def cancel(self, run_id: str) -> dict[str, Any]:
        """POST /api/jobs/{run_id}/cancel."""
        return self._call("POST", f"/api/jobs/{run_id}/cancel")


class BrokerJobs:
    """Jobs through the Redis job book, from this process (no API server needed)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.book = JobBook(settings.broker_url)

    def submit(self, request: JobRequest) -> dict[str, Any]:
        """Plan and queue the job here."""
        return submit(request, self.settings, self.book)

    def status(self, run_id: str) -> dict[str, Any]:
        """The job's progress from the book."""
        return self.book.status(run_id)

    def list(self, limit: int = 50) -> list[dict[str, Any]]:
        """The latest jobs from the book."""
        return self.book.list(limit)

    def cancel(self, run_id: str) -> dict[str, Any]:
        """Cancel here: mark it and revoke its queued episodes."""
        return cancel(run_id, self.book)


def jobs_client(settings: Settings) -> Jobs:
    """The API when LORALOOP_API_URL is set, else the broker; jobs need one of them."""
    if settings.api_url:
        return ApiJobs(settings.api_url, settings.api_token)
    if settings.broker_url:
        return BrokerJobs(settings)
    raise ConfigError("jobs need the rollout API (LORALOOP_API_URL) or a broker (LORALOOP_BROKER_URL); "
                      "without them `loraloop rollout` runs episodes in this process")
