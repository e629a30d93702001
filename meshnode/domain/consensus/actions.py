"""What the MeshConsensus core (``tendermint.Core``) says and is configured with: its actions
(messages to broadcast, timers, decisions, evidence, emergency decisions), its timeouts and
the limits of the blocks it proposes."""

from __future__ import annotations

from dataclasses import dataclass

from meshnode.domain.consensus import blocks
from meshnode.domain.consensus import messages as m

PROPOSE, PREVOTE_STEP, PRECOMMIT_STEP, IDLE = "propose", "prevote", "precommit", "idle"
RESEND, EMERGENCY, ANNOUNCE = "resend", "emergency", "announce"  # timers besides the three of the algorithm
FUTURE_HEIGHTS = 4  # messages this far ahead are kept for later; a catch-up answer holds this many commits
KEPT_COMMITS = 64  # recent commits kept in memory to answer nodes catching up
MAX_PENDING = 1024


# --- actions ------------------------------------------------------------------------


@dataclass(frozen=True)
class Broadcast:
    message: m.Message


@dataclass(frozen=True)
class Schedule:
    step: str  # propose, prevote or precommit
    height: int
    round: int
    at_ms: int


@dataclass(frozen=True)
class Decide:
    height: int
    block: bytes  # the encoded block (blocks.encode_block); its values, in order, are ``values``
    round: int
    precommits: tuple[m.Message, ...]
    from_commit: bool = False  # learned from another node's commit (catching up), not by our own count

    @property
    def values(self) -> tuple[bytes, ...]:
        return m.block_values(self.block)


@dataclass(frozen=True)
class Evidence:
    """Two signed votes of one validator for one (kind, height, round) that disagree."""

    first: m.Message
    second: m.Message


@dataclass(frozen=True)
class Emergency:
    height: int
    block: bytes


@dataclass(frozen=True)
class NoQuorum:
    """A height undecided for ``emergency_after_ms`` on a side of less than half the committee's
    weight (``heard`` of ``total``): no emergency decision is taken; said once per height."""

    height: int
    heard: int
    total: int


@dataclass(frozen=True)
class Revisit:
    height: int
    provisional: bytes  # blocks
    committed: bytes

    @property
    def confirmed(self) -> bool:
        return self.provisional == self.committed


@dataclass(frozen=True)
class Timeouts:
    propose_ms: int = 1000
    prevote_ms: int = 500
    precommit_ms: int = 500
    delta_ms: int = 500  # added per round
    resend_ms: int = 2000  # own messages of the current round go out again this often (lossy links)
    emergency_after_ms: int = 30_000
    request_batch_ms: int = 0  # values asked within this long go out as one request (0: each at once)

    def of(self, step: str, round_: int) -> int:
        if step == RESEND:
            return self.resend_ms
        base = {PROPOSE: self.propose_ms, PREVOTE_STEP: self.prevote_ms, PRECOMMIT_STEP: self.precommit_ms}[step]
        return base + round_ * self.delta_ms


@dataclass(frozen=True)
class BlockLimits:
    """What a proposer puts into one block: at most ``values`` values and ``bytes`` bytes of
    encoded block (within the wire limits of ``blocks``). A validator accepts any block
    within the wire limits: these bound what this node proposes, not what it votes for."""

    values: int = 256
    bytes: int = 256 * 1024

    def __post_init__(self):
        if not 1 <= self.values <= blocks.MAX_BLOCK_VALUES:
            raise ValueError(f"a block holds 1 to {blocks.MAX_BLOCK_VALUES} values")
        if not m.MAX_VALUE + 16 <= self.bytes <= blocks.MAX_BLOCK_BYTES:
            raise ValueError(f"a block's size limit is {m.MAX_VALUE + 16} to {blocks.MAX_BLOCK_BYTES} bytes")
