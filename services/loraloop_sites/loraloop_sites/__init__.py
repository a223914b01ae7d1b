"""Offline task websites for the web environment: Shopzon (a shop, like Amazon) and Quickmail (like Gmail).

One FastAPI app serves both, with REAL's `/config` and `/finish` protocol per site (see `protocol`).
A package of its own (`loraloop-sites`) that never imports loraloop: the `sites` image installs only it.
"""

from .app import create_app, serve, serving

__all__ = ["create_app", "serve", "serving"]
