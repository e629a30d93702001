"""Autostart of a child: systemd unit or scripts (stub: spawn-ops owns it)."""

from __future__ import annotations

import sys
from pathlib import Path


def unit_name(did: str) -> str:
    raise NotImplementedError


def systemd_unit_text(home: Path, did: str, name: str, *, system: bool, user: str | None = None,
                      python: str = sys.executable) -> str:
    raise NotImplementedError


def script_texts(home: Path, python: str = sys.executable) -> dict[str, str]:
    raise NotImplementedError


def install(home: Path, did: str, name: str, autostart: str) -> dict:
    raise NotImplementedError
