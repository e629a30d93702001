"""The main LLM's answer as it is written, for the event feed: ``llm_token`` events (protocols/web.md 5).

``LiveTokens.hear`` is the cycle's ``LiveAnswer`` listener (engines/cognition/live_answer.py): it is
called on the cycle's task for each piece of the answer and must not block, so it only buffers. The
pieces are coalesced: the first one of an answer goes out at once, the next ones at most every
``COALESCE_S`` (``run`` sends what waits), so a fast LLM costs the browser ~20 events a second, not
one a token. Nothing is stored: a page that opens mid-answer gets the rest (its ``offset`` says how
much it missed) and the stored answer with the tick, as before. Memory: at most ``MAX_PENDING``
characters wait between two sends.

An event's data: ``{tick, threads, state, offset, text}``; ``state`` is ``start`` (the LLM is asked:
``llm``, ``threads`` it answers, ``text`` ""), ``text`` (``text`` continues the answer at ``offset``
characters), ``restart`` (a retried request: the answer starts again) or ``end`` (``ok`` false: the LLM
failed; the tick's answer, stored, comes with the ``tick`` and ``chat`` events).
"""

from __future__ import annotations

from typing import Callable

import trio

COALESCE_S = 0.05
MAX_PENDING = 64 * 1024


class LiveTokens:
    def __init__(self, send: Callable[[str, dict], None], nudge: Callable[[], None]):
        self.send = send  # (event type, data) to every open stream that wants it
        self.nudge = nudge  # the feed looks now (the cycle's state changed: thinking, or not)
        self.pending: dict | None = None  # the text not sent yet: {tick, threads, offset, text}
        self.last_sent = float("-inf")
        self.events = 0  # llm_token events sent (a test and bench/web.py count them)
        self._due = trio.Event()

    def hear(self, event: dict) -> None:
        kind = event.get("event")
        if kind == "text":
            p = self.pending
            if p is not None and p["tick"] != event["tick"]:
                self.flush()
                p = None
            if p is None:
                self.pending = {"tick": event["tick"], "threads": event["threads"], "offset": event["offset"],
                                "text": event["text"]}
            else:
                p["text"] += event["text"]
            if trio.current_time() - self.last_sent >= COALESCE_S or len(self.pending["text"]) >= MAX_PENDING:
                self.flush()
            else:
                self._due.set()
            return
        self.flush()
        if kind == "start":
            self._send({"tick": event["tick"], "threads": event["threads"], "state": "start", "llm": event.get("llm"),
                        "offset": 0, "text": ""})
            self.last_sent = float("-inf")  # the first piece of an answer goes out at once
        elif kind == "restart":
            self._send({"tick": event["tick"], "threads": event["threads"], "state": "restart", "offset": 0, "text": ""})
        elif kind == "end":
            self._send({"tick": event["tick"], "threads": event["threads"], "state": "end", "ok": bool(event.get("ok")),
                        "offset": event.get("chars", 0), "text": ""})
        self.nudge()

    def flush(self) -> None:
        p, self.pending = self.pending, None
        if p is not None and p["text"]:
            self._send({**p, "state": "text"})
            self.last_sent = trio.current_time()

    def _send(self, data: dict) -> None:
        self.events += 1
        self.send("llm_token", data)

    async def run(self) -> None:
        """Send what waits once ``COALESCE_S`` has passed since the last send."""
        while True:
            await self._due.wait()
            self._due = trio.Event()
            wait = self.last_sent + COALESCE_S - trio.current_time()
            if wait > 0:
                await trio.sleep(wait)
            self.flush()
