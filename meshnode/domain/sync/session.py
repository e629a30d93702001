"""One sync session between two nodes, sans-IO: messages in, messages out.

A session reconciles the containers each side may share with the other,
filtered by what the receiving side wants (``selective.Want``). The initiator
sends its want with the first message; the responder sends its own with the
first answer. A *pass* reconciles the items one want lets through (see
``reconcile``); items found in a pass flow toward the side whose want defined
it. When both wants are equal — the usual case — one pass serves both
directions; otherwise the initiator starts a second pass over the responder's
want. Messages are maps::

    {"want": W?, "ranges": R}    the initiator's first message (W: the want, absent for everything)
    {"want": W?, "ranges": R|null}  the responder's first answer
    {"ranges": R|null}           every other message; null: "this pass is over for me"

When a pass ends with the initiator's null, the initiator may send the next
pass's first message right after it. ``push`` and ``fetch`` say what moves once
the session is done: item ids to send to the peer and to ask it for.

Two formats of ``R``: 2 (``rbsr``, ``/meshnode/sync/2.0.0``) and, for peers
that predate it, 1 (``reconcile``, ``/meshnode/sync/1.0.0``); the stream's
protocol says which, and the envelope above is the same in both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from meshnode.domain.sync.index_cache import IndexCache
from meshnode.domain.sync.rbsr import Rbsr
from meshnode.domain.sync.reconcile import Reconciler, ReconcileError, decode, encode
from meshnode.domain.sync.selective import Want, WantError

INITIATOR, RESPONDER = "initiator", "responder"
FORMATS = (1, 2)


@dataclass(frozen=True)
class Entry:
    timestamp_ms: int
    ident: bytes  # 32-byte digest inside the container DID
    cls: str
    tags: frozenset[str]


@dataclass
class Session:
    role: str
    catalog: list[Entry]  # what this side may share with this peer
    want: Want  # what this side takes from this peer
    version: int = 2  # the reconciliation format (FORMATS): the stream's protocol decides
    fp_len: int | None = None  # format 2: the fingerprint length this side opens with (a test hook)
    indexes: IndexCache | None = None  # format 2: the node's index kept between sessions (``index_cache``)
    peer_want: Want | None = None
    push: set[bytes] = field(default_factory=set)
    fetch: set[bytes] = field(default_factory=set)
    rounds: int = 0
    passes: int = 0
    restarts: int = 0  # format 2: passes started again after a fingerprint collision
    done: bool = False
    _reconciler: Reconciler | None = None
    _pass_owner: str = ""  # "me" or "peer": whose want the current pass serves (or "both")
    _first: bool = True  # nothing heard from the peer yet

    def __post_init__(self) -> None:
        if self.version not in FORMATS:
            raise ValueError(f"sync format {self.version} is not one of {FORMATS}")

    # --- initiator ----------------------------------------------------------------

    def start(self) -> list[dict[str, Any]]:
        assert self.role == INITIATOR and self.passes == 0
        first = self._begin_pass(self.want, "me")
        message: dict[str, Any] = {"ranges": self._encode(first)}
        wire = self.want.to_wire()
        if wire is not None:
            message["want"] = wire
        return [message]

    # --- both sides ---------------------------------------------------------------

    def receive(self, message: Any) -> list[dict[str, Any]]:
        """The peer's message in; the messages to send back out (possibly none)."""
        if self.done:
            raise ReconcileError("a message after the session ended")
        if type(message) is not dict or "ranges" not in message:
            raise ReconcileError("a sync message is a map with 'ranges'")
        ranges = None if message["ranges"] is None else self._decode(message["ranges"])
        out: list[dict[str, Any]] = []
        if self._first:  # the peer's want comes with its first message
            self._first = False
            try:
                self.peer_want = Want.from_wire(message.get("want"))
            except WantError as exc:
                raise ReconcileError(str(exc)) from None
            if self.role == INITIATOR and self.peer_want == self.want:
                self._pass_owner = "both"  # one pass serves both directions
            if self.role == RESPONDER:
                if ranges is None:
                    raise ReconcileError("the first message must carry ranges")
                self._begin_pass(self.peer_want, "peer")
                answer = self._reconciler.receive(ranges)
                reply: dict[str, Any] = {"ranges": self._encode(answer) if answer else None}
                wire = self.want.to_wire()
                if wire is not None:
                    reply["want"] = wire
                if answer is None:
                    self._end_pass()
                return [reply]
        elif self._reconciler is None:  # the responder, between passes: this opens the next one
            if self.role != RESPONDER or ranges is None:
                raise ReconcileError("expected the first message of a new pass")
            self._begin_pass(self.want, "me")
            answer = self._reconciler.receive(ranges)
            if answer is None:
                self._end_pass()
            return [{"ranges": self._encode(answer) if answer else None}]
        if ranges is None:
            self._reconciler.peer_ended()
            self._end_pass()
        else:
            answer = self._reconciler.receive(ranges)
            if answer is not None:
                return [{"ranges": self._encode(answer)}]
            out.append({"ranges": None})
            self._end_pass()
        if self.role == INITIATOR and not self.done:
            out.append({"ranges": self._encode(self._begin_pass(self.peer_want, "peer"))})
        return out

    # --- passes -------------------------------------------------------------------

    def _begin_pass(self, want: Want, owner: str):
        if self.peer_want is not None and self.peer_want == self.want:
            owner = "both"
        self.passes += 1
        self._pass_owner = owner
        if self.version == 1:
            self._reconciler = Reconciler([(e.timestamp_ms, e.ident) for e in want.select(self.catalog)])
        else:
            self._reconciler = Rbsr(want.idents(self.catalog), self.role == INITIATOR, self.fp_len, self.indexes)
        return self._reconciler.initiate() if self.role == INITIATOR else None

    def _encode(self, message):
        return encode(message) if self.version == 1 else message  # format 2 builds CBOR-ready data

    def _decode(self, data):
        return decode(data) if self.version == 1 else data  # format 2: checked by Rbsr.receive

    def _end_pass(self) -> None:
        r, owner = self._reconciler, self._pass_owner
        self.rounds += r.rounds
        self.restarts += getattr(r, "restarts", 0)
        if owner in ("me", "both"):
            self.fetch |= r.need
        if owner in ("peer", "both"):
            self.push |= r.have
        self._reconciler = None
        # a second pass only when the wants differ; the first pass served the initiator's want
        self.done = owner == "both" or self.passes == 2
