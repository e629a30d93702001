"""The startup heap kept out of the cyclic garbage collector's full passes.

Theory of operation
-------------------
A running node holds ~150,000 objects made while it started (py-libp2p, trio,
protobuf, cbor2, Starlette and meshnode's own modules and services) that live
as long as the process. CPython's full (generation 2) collection walks every
one of them each time: ~65-100 ms here, during which the trio loop stops. Under
load (a swarm of connections and streams allocates fast) that happens every few
tens of seconds, and it was the longest stall of the node's loop measured in
``bench/attack.py``: one such pause is a whole ``status`` p99 on its own.
``freeze_startup_heap`` collects once and then moves what survives into the
permanent generation (``gc.freeze``), so later full passes walk only what was
made since (a few ms). The price: a reference cycle among the frozen objects
that becomes garbage later is never collected, which startup objects, kept
for the node's lifetime, do not form in numbers. So the freeze comes before
the first connection: py-libp2p lets go of a closed connection only when the
collector frees its cycle, and a connection frozen with the heap stayed the
peer's connection after the peer had gone (a ping then failed on it).
"""

from __future__ import annotations

import gc


def freeze_startup_heap(metrics=None) -> int:
    """Collect, then keep every object alive now out of later collections; how many are frozen
    (also the gauge ``gc_frozen_objects``). Call once, as the node starts, before its first connection."""
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    if metrics is not None:
        metrics.set("gc_frozen_objects", frozen)
    return frozen
