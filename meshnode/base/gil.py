"""The interpreter lock's switch interval a running node uses.

Theory of operation
-------------------
A node runs trio on its main thread and SQLite and large decodes in worker
threads (``trio.to_thread``): the store's reader answering the person's
``status`` makes ~40 trips out of and back into the interpreter lock (each
statement's prepare and step release it). While the event loop is busy (a
swarm's frames being read and refused), a thread that wants the lock back
waits until the loop's thread is asked to drop it: CPython asks after the
switch interval, 5 ms by default, so one status could wait 40 x 5 ms behind a
loop that was never stalled for long. At 1 ms the loop gives way five times
sooner; the price is a few more lock hand-offs a second while threads compete
(none while only the loop runs). Measured with ``bench/attack.py`` (issue 36):
honest ``status`` p99 under the mixed Sybil attack 19.2 ms -> 7.3 ms, under
sybil_slowloris 14.2 -> 9.2 ms, with the victim's CPU unchanged (0.27 -> 0.26
of a core).
"""

from __future__ import annotations

import sys

SWITCH_INTERVAL_S = 0.001


def shorten_switch_interval(metrics=None) -> float:
    """Set the node's switch interval (also the gauge ``gil_switch_interval_seconds``); the one it
    had before."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    if metrics is not None:
        metrics.set("gil_switch_interval_seconds", sys.getswitchinterval())
    return before
