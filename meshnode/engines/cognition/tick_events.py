"""A tick of the cycle ended: the parts of the node built after the cycle that want to know at once
(the web's event feed) subscribe here. The node makes one and gives its ``ended`` to the Cycle as
``on_tick`` and its ``live`` as ``on_live`` (the main LLM's answer as it is written, live_answer.py);
each listener subscribes itself when it is built (as with net/events.py's hooks)."""

from __future__ import annotations

from typing import Callable


class TickEvents:
    def __init__(self) -> None:
        self._ended: list[Callable[[dict], None]] = []
        self._live: list[Callable[[dict], None]] = []

    def on_ended(self, listener: Callable[[dict], None]) -> None:
        """``listener(summary)``: a tick ended with this summary."""
        self._ended.append(listener)

    def ended(self, summary: dict) -> None:
        for listener in self._ended:
            listener(summary)

    def on_live(self, listener: Callable[[dict], None]) -> None:
        """``listener(event)``: the main LLM's answer is being written (``LiveAnswer``'s events); it
        must not block (it runs on the cycle's task)."""
        self._live.append(listener)

    def live(self, event: dict) -> None:
        for listener in self._live:
            listener(event)
