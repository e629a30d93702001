"""The main LLM's answer while it is written: who is being answered, and the text as it streams.

The cycle asks the main LLM inside ``asked(tick, llm, shown)``; the LLM client calls ``text(delta)``
for each piece of the answer as it arrives (``None``: a retry starts the answer again). Listeners
(the web's feed) hear ``{"event": "start" | "text" | "restart" | "end", "tick", ...}`` at once, on
the cycle's task: they must not block (the feed buffers and coalesces). Nothing here is stored: the
answer is stored whole by the tick, as before; ``asking()`` is what the cycle's status shows while
the LLM thinks ("thinking": a tick with these messages in its prompt is running).
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Callable, Iterator

log = logging.getLogger("meshnode.engines.cognition")


class LiveAnswer:
    def __init__(self, listener: Callable[[dict], None] | None = None):
        self.listener = listener
        self._asking: dict | None = None
        self.chars = 0  # of the answer so far (the offset of the next piece)

    def asking(self) -> dict | None:
        """{tick, llm, threads, messages, since_ms} while the main LLM is asked; None between asks."""
        return dict(self._asking) if self._asking is not None else None

    @contextlib.contextmanager
    def asked(self, tick: int, llm: str, shown: list[tuple[str, str | None]]) -> Iterator[None]:
        """The main LLM is asked for tick ``tick`` with a prompt showing ``shown`` (message id, thread)."""
        self._asking = {"tick": tick, "llm": llm, "threads": sorted({t for _, t in shown if t}),
                        "messages": [d for d, _ in shown], "since_ms": int(time.time() * 1000)}
        self.chars = 0
        self._tell({"event": "start", **self._asking})
        ok = False
        try:
            yield
            ok = True
        finally:
            asked, self._asking = self._asking, None
            self._tell({"event": "end", "tick": asked["tick"], "threads": asked["threads"], "ok": ok,
                        "chars": self.chars})

    def text(self, delta: str | None) -> None:
        """A piece of the answer (``None``: the answer starts again, a retried request)."""
        if self._asking is None:
            return
        if delta is None:
            self.chars = 0
            self._tell({"event": "restart", "tick": self._asking["tick"], "threads": self._asking["threads"]})
            return
        if delta:
            self._tell({"event": "text", "tick": self._asking["tick"], "threads": self._asking["threads"],
                        "offset": self.chars, "text": delta})
            self.chars += len(delta)

    def _tell(self, event: dict) -> None:
        if self.listener is None:
            return
        try:
            self.listener(event)
        except Exception:  # a listener's bug must not stop the agent
            log.exception("live answer listener failed")
