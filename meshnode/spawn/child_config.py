"""The child's config.toml (the parent's effective values, the child's own name, ports and paths)
and its bootstrap.txt (the parent's addresses)."""

from __future__ import annotations

from pathlib import Path

from meshnode.config import Config


def write(home: Path, parent: Config, *, name: str, listen_port: int, web_port: int) -> Path:
    """Write ``<home>/config.toml`` for the child; returns its path."""
    raise NotImplementedError


def write_bootstrap(home: Path, addresses: list[str], *, parent_peer_id: str, parent_did: str,
                    parent_name: str) -> list[str]:
    """Write ``<home>/bootstrap.txt``; returns the address lines written."""
    raise NotImplementedError
