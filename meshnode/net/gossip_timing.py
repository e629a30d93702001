"""Where a gossiped container's time goes, stage by stage (issue 18: gossip latency).

Each stage is a wall-clock time in ms (the clock of the container's own
``timestamp_ms``, so the first stage's lag includes the author's side):

* at the author: ``written`` (its own store write returned), ``published`` (pubsub.publish returned: validated
  by its own validator and queued to every mesh peer);
* at a receiver: ``arrived`` (the first copy reached the topic validator), ``validated``
  (the validator let it through), ``read`` (the subscription reader took it), ``stored``
  (the store write returned).

Every step is observed as a histogram ``gossip_stage_seconds{stage}`` (the time since the
previous stage, the first one since the container's timestamp), and the last ``KEPT``
containers' stages are kept for the ``received`` control command (tests and bench read them).
Memory is bounded: entries are forgotten oldest first.
"""

from __future__ import annotations

from collections import OrderedDict

KEPT = 1024
ORDER = ("written", "published", "arrived", "validated", "read", "stored")


class GossipTiming:
    def __init__(self, metrics=None, kept: int = KEPT):
        self.metrics = metrics
        self.kept = kept
        self._stages: OrderedDict[str, dict[str, int]] = OrderedDict()

    def mark(self, did: str, stage: str, at_ms: int, timestamp_ms: int) -> None:
        """``did`` (stamped ``timestamp_ms``) reached ``stage`` at ``at_ms``; the first mark of a stage wins."""
        stages = self._stages.get(did)
        if stages is None:
            stages = self._stages[did] = {}
            while len(self._stages) > self.kept:
                self._stages.popitem(last=False)
        if stage in stages:
            return
        before = [stages[s] for s in ORDER[:ORDER.index(stage)] if s in stages] if stage in ORDER else []
        since = before[-1] if before else timestamp_ms
        stages[stage] = at_ms
        if self.metrics is not None:
            self.metrics.observe("gossip_stage_seconds", max(0, at_ms - since) / 1000, stage=stage)

    def of(self, did: str) -> dict[str, int]:
        return dict(self._stages.get(did, {}))
