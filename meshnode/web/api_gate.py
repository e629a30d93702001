"""Routes of gate (stub: its owner replaces this module; protocols/web.md 4.1)."""

from __future__ import annotations

from meshnode.web.endpoint import Endpoint

ROUTES: list[Endpoint] = []
