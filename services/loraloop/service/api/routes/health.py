"""The service's own routes, open without a token: /api/health and the Prometheus /metrics."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4 as TEXT_FORMAT

from loraloop.service.api.deps import BookDep, SettingsDep
from loraloop.service.book import without_credentials
from loraloop.service.models import ErrorMessage, Health

router = APIRouter(tags=["service"])


@router.get(
    "/api/health",
    response_model=Health,
    responses={503: {"model": ErrorMessage, "description": "the broker does not answer"}},
)
def health(settings: SettingsDep, book: BookDep) -> Health:
    """Whether the broker answers, and how many episodes wait in its queue."""
    return Health(broker=without_credentials(settings.broker_url), queue_depth=book.queue_depth())


@router.get(
    "/metrics",
    response_class=Response,
    responses={
        200: {
            "description": "Prometheus text exposition: episodes, failures by cause, latencies, "
            "queue depth, jobs by state",
            "content": {TEXT_FORMAT: {"schema": {"type": "string"}}},
        },
        503: {"model": ErrorMessage, "description": "the broker does not answer"},
    },
)
def metrics(request: Request) -> Response:
    """Prometheus exposition: episodes, failures by cause, latencies, queue depth, jobs."""
    return Response(generate_latest(request.app.state.metrics), media_type=TEXT_FORMAT)
