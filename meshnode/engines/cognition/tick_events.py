"""A tick of the cycle ended: the parts of the node built after the cycle that want to know at once
(the web's event feed) subscribe here. The node makes one and gives its ``ended`` to the Cycle as
``on_tick``; each listener subscribes itself when it is built (as with net/events.py's hooks)."""

from __future__ import annotations

from typing import Callable


class TickEvents:
    def __init__(self) -> None:
        self._ended: list[Callable[[dict], None]] = []

    def on_ended(self, listener: Callable[[dict], None]) -> None:
        """``listener(summary)``: a tick ended with this summary."""
        self._ended.append(listener)

    def ended(self, summary: dict) -> None:
        for listener in self._ended:
            listener(summary)
