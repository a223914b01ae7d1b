"""What the routes depend on: the settings, the job book and Celery app of this API, and the bearer token."""

from __future__ import annotations

from typing import Annotated

from celery import Celery
from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from loraloop.http_guards import require_token
from loraloop.service.book import JobBook
from loraloop.settings import Settings

bearer = HTTPBearer(auto_error=False, description="LORALOOP_API_TOKEN; needed only when the API has one")


def get_settings(request: Request) -> Settings:
    """The settings the app was built with."""
    return request.app.state.settings


def get_book(request: Request) -> JobBook:
    """The app's job book in Redis."""
    return request.app.state.book


def get_queue(request: Request) -> Celery:
    """The Celery app that queues and revokes episodes."""
    return request.app.state.queue


SettingsDep = Annotated[Settings, Depends(get_settings)]
BookDep = Annotated[JobBook, Depends(get_book)]
QueueDep = Annotated[Celery, Depends(get_queue)]


def authorised(
    settings: SettingsDep, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> None:
    """With LORALOOP_API_TOKEN set, refuse (401) a request without `Authorization: Bearer <that token>`."""
    require_token(settings.api_token, credentials, "LORALOOP_API_TOKEN")
