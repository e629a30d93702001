"""/metrics in Prometheus' text format (stub: web-feed replaces this module; protocols/web.md 8)."""

from __future__ import annotations

from meshnode.web.endpoint import Endpoint

ROUTES: list[Endpoint] = []
