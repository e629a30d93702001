"""CLI commands for consensus (being written)."""

from __future__ import annotations


def add_parsers(sub, common) -> None:
    """Register the `consensus` commands (none yet)."""
