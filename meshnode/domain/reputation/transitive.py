"""Transitive trust: what others' published trust statements say about agents this node has not judged.

Pure: this node's direct trust and a graph of statements in, a value per agent out.

Rules (protocols/reputation.md, "Transitive trust"):

* A path ``me -> B1 -> ... -> Bk -> C`` is worth
  ``direct(B1) * x(B1->B2) * ... * x(Bk->C) * depth_decay^(depth - 1)``,
  where ``depth`` is the number of hops from me (a direct value has depth 1)
  and ``x(A->B)`` is A's newest statement about B. Transitive trust in C is
  the best path of at most ``max_depth`` hops.
* Only agents this node trusts at least ``min_voucher`` (directly, or
  transitively) vouch for others: statements by unknown or distrusted
  signers carry nothing, so a ring of fresh identities praising each other
  adds nothing.
* Direct evidence wins: an agent this node has judged itself keeps its direct
  value (it is never raised, nor lowered, by what others say), and it vouches
  with that value. Statements about this node itself are ignored.

Since every factor is at most 1, the best path is found hop by hop
(Bellman-Ford over at most ``max_depth`` rounds): a cycle can never improve a
value, so the best walk is a simple path. Work is ``O(max_depth * edges)``.
Ties are broken by fewer hops, then by the smaller path (as text), so every
node computes the same answer from the same inputs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from meshnode.domain.reputation.model import ReputationError


@dataclass(frozen=True)
class TransitiveParams:
    depth_decay: float = 0.8
    max_depth: int = 3
    min_voucher: float = 0.55

    def __post_init__(self) -> None:
        if not 0.0 <= self.depth_decay <= 1.0 or not 0.0 <= self.min_voucher <= 1.0:
            raise ReputationError("bad_params", "depth_decay and min_voucher must be in [0, 1]")
        if type(self.max_depth) is not int or not 1 <= self.max_depth <= 8:
            raise ReputationError("bad_params", "max_depth must be an integer from 1 to 8")


DEFAULT_TRANSITIVE = TransitiveParams()


@dataclass(frozen=True)
class Reach:
    """The best way this node reaches an agent: its value, the hops, and the agents
    on the path (first the directly trusted voucher, last the agent itself)."""

    value: float
    depth: int
    path: tuple[str, ...]

    @property
    def basis(self) -> str:
        return "direct" if self.depth == 1 else "transitive"


def _better(a: Reach, b: Reach | None) -> bool:
    """Higher value, then fewer hops, then the smaller path."""
    if b is None or a.value != b.value:
        return b is None or a.value > b.value
    return (a.depth, a.path) < (b.depth, b.path)


def _unit(x: float) -> bool:
    return isinstance(x, (int, float)) and 0.0 <= x <= 1.0  # NaN fails


def reach(me: str, direct: Mapping[str, float], statements: Mapping[str, Mapping[str, float]],
          params: TransitiveParams = DEFAULT_TRANSITIVE) -> dict[str, Reach]:
    """Every agent reachable from ``me`` within ``max_depth`` hops, with its best path.

    ``direct``: this node's own trust in the agents it has evidence about.
    ``statements``: signer -> subject -> score, the newest statement per pair.
    Values outside [0, 1] (or not numbers) are ignored, as are self-statements.
    """
    best: dict[str, Reach] = {}
    for did in sorted(direct):
        if did != me and _unit(direct[did]):
            best[did] = Reach(float(direct[did]), 1, (did,))
    frontier = dict(best)
    for depth in range(2, params.max_depth + 1):
        improved: dict[str, Reach] = {}
        for voucher in sorted(frontier):
            via = frontier[voucher]
            if via.value < params.min_voucher:
                continue
            for subject, x in sorted(statements.get(voucher, {}).items()):
                if subject == me or subject == voucher or subject in direct or not _unit(x):
                    continue
                cand = Reach(via.value * float(x) * params.depth_decay, depth, via.path + (subject,))
                if _better(cand, best.get(subject)) and _better(cand, improved.get(subject)):
                    improved[subject] = cand
        if not improved:
            break
        best.update(improved)
        frontier = improved
    return best


def combined(me: str, direct: Mapping[str, float], statements: Mapping[str, Mapping[str, float]],
             params: TransitiveParams = DEFAULT_TRANSITIVE) -> dict[str, float]:
    """One trust value per reachable agent: direct where this node has evidence, else transitive.
    Agents absent from the result are unknown (callers use the prior, or nothing)."""
    return {did: r.value for did, r in reach(me, direct, statements, params).items()}
