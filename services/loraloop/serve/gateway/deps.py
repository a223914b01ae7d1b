"""What the gateway's routes depend on: its state (state.Gateway), the caller's key, and the admin check."""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, Request

from loraloop.errors import SessionError
from loraloop.serve.gateway.state import Gateway


def get_gateway(request: Request) -> Gateway:
    """The app's gateway state."""
    return request.app.state.gateway


GatewayDep = Annotated[Gateway, Depends(get_gateway)]


def bearer(request: Request) -> str:
    """The key an `Authorization: Bearer <key>` header carries; 401 without one."""
    scheme, _, key = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        raise SessionError("missing API key: send `Authorization: Bearer <key>`", 401)
    return key.strip()


def admin(request: Request, gateway: GatewayDep) -> None:
    """Refuse (401) a call whose key is not the admin key (LORALOOP_GATEWAY_ADMIN_KEY)."""
    if not secrets.compare_digest(bearer(request).encode(), gateway.admin_key.encode()):
        raise SessionError("invalid admin key (LORALOOP_GATEWAY_ADMIN_KEY)", 401)
