"""Offline task websites for the web environment: Shopzon (a shop, like Amazon) and Quickmail (like Gmail).

One FastAPI app serves both, with REAL's `/config` and `/finish` protocol per site (see `protocol`).
"""
from .app import create_app, serve

__all__ = ["create_app", "serve"]
