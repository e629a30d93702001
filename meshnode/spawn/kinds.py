"""What each kind of child gets, per table and per container class (stub: spawn-kinds owns it)."""

from __future__ import annotations

KIND_RULES: dict[str, dict[str, str]] = {}


def rule(kind: str, *, table: str | None = None, cls: str | None = None) -> str:
    raise NotImplementedError
