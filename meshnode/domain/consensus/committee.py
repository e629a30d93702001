"""A committee of validators with voting weights, and who proposes when.

Weights are integers, so quorums are exact: a *quorum* is more than two thirds
of the total weight, a *third* is more than one third. Safety holds while the
weight of Byzantine validators is below one third of the total.

The proposer of (height, round) is drawn by weight from a hash of the
committee id, the height and the round: every node computes the same one,
and a validator proposes in proportion to its weight.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from typing import Mapping

from meshnode.base.container import cbor
from meshnode.domain.reputation.weights import CONSENSUS_FLOOR, consensus_weights


@dataclass(frozen=True)
class Committee:
    id: str
    members: tuple[tuple[str, int], ...]  # (validator DID, weight > 0), sorted by DID

    @classmethod
    def of(cls, weights: Mapping[str, int], epoch: int = 0) -> "Committee":
        members = tuple(sorted((did, int(w)) for did, w in weights.items() if int(w) > 0))
        if not members:
            raise ValueError("a committee needs at least one validator with positive weight")
        digest = hashlib.sha256(cbor.encode([epoch, [list(m) for m in members]])).hexdigest()[:16]
        return cls(f"e{epoch}-{digest}", members)

    @cached_property
    def weights(self) -> dict[str, int]:
        return dict(self.members)

    @cached_property
    def total(self) -> int:
        return sum(w for _, w in self.members)

    def weight(self, did: str) -> int:
        return self.weights.get(did, 0)

    def quorum(self, weight: int) -> bool:
        """More than two thirds of the total weight."""
        return 3 * weight > 2 * self.total

    def third(self, weight: int) -> bool:
        """More than one third of the total weight: at least one honest validator among them."""
        return 3 * weight > self.total

    def proposer(self, height: int, round_: int) -> str:
        draw = int.from_bytes(hashlib.sha256(f"{self.id}|{height}|{round_}".encode()).digest()[:8], "big")
        point = draw % self.total
        for did, w in self.members:
            if point < w:
                return did
            point -= w
        raise AssertionError("unreachable: the draw is below the total weight")


def weights_from_trust(trust: Mapping[str, float], *, floor: float = CONSENSUS_FLOOR,
                       scale: int = 1000) -> dict[str, int]:
    """Integer voting weights from trust in [0, 1] (``reputation.consensus_weights``): identities
    below ``floor`` get none — fresh Sybil identities with no earned trust carry no weight —
    and the rest weigh in proportion to their trust."""
    weights = consensus_weights(trust, floor=floor)
    return {did: round(w * scale) for did, w in weights.items() if round(w * scale) > 0}
