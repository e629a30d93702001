"""Plug-in adapters (design 4.1): an operator's command or entry point printing events.

``parse_lines`` is pure: it validates each JSON line, prefixes type and key with the adapter's
name (a plug-in cannot collide with or suppress a built-in event), caps the severity and the
line count, and counts invalid lines keeping the first error. ``run_plugin`` runs a command
through the gate's no-shell runner, or an entry point in a worker thread, under a timeout.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from meshnode.reactor.types import Event

MAX_LINES = 1000


@dataclass
class PluginRun:
    name: str
    events: list = field(default_factory=list)      # list[Event]
    valid: int = 0
    invalid: int = 0
    dropped: int = 0                                # lines beyond MAX_LINES
    first_error: str = ""
    failed: bool = False                            # non-zero exit, timeout, crash
    exit: str = "ok"                                # ok | error | timeout
    stderr: str = ""                                # at most 2 KiB


def parse_lines(adapter: str, text: str, cfg_adapter: Mapping, now_ms: int) -> tuple[list[Event], list[str]]:
    raise NotImplementedError


async def run_plugin(name: str, spec: Mapping, home: Path, now_ms: int) -> PluginRun:
    raise NotImplementedError
