"""Starting and stopping a child process (stub: spawn-ops owns it)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping


def child_env(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    raise NotImplementedError


def launch(home: Path, autostart: str) -> dict:
    raise NotImplementedError


def stop(home: Path, autostart: str, timeout: float = 10.0) -> bool:
    raise NotImplementedError


def running_pid(home: Path) -> int | None:
    raise NotImplementedError


def log_tail(home: Path, lines: int = 20) -> str:
    raise NotImplementedError
