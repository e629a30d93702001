"""CLI commands for reputation (being written)."""

from __future__ import annotations


def add_parsers(sub, common) -> None:
    """Register the `reputation` commands (none yet)."""
