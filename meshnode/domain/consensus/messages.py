"""MeshConsensus wire messages: signed proposals, votes, commits and requests.

Every message a validator sends is signed over its exact deterministic-CBOR
bytes, so anyone holding it can check who said what; two conflicting signed
votes from one validator are proof of equivocation by themselves.

Layout (a CBOR map; ``sig`` covers the map without ``sig``)::

    {"t": kind, "c": committee id, "h": height, "r": round, "v": block id or null,
     "vr": valid round (proposals), "p": block (proposals, commits, requests),
     "s": sender DID, "sig": 64 bytes}

Kinds: ``proposal`` (``p`` holds the block proposed for the height),
``prevote``, ``precommit``, ``request`` (values someone asks the committee
to decide: ``p`` holds them as a block), ``commit`` (``p`` holds the block, ``q`` the list
of encoded precommits that decided it), ``catchup`` (a node behind asks for
commits from height ``h`` on). A height decides a *block* of values
(``blocks.py``); proposals, votes and commits name it by its block id, the
Merkle root over its values' SHA-256 hashes, and ``null`` is a vote for
nothing (nil). A value's own id is its SHA-256.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import lru_cache

from nacl.exceptions import BadSignatureError
from nacl.signing import VerifyKey

from meshnode.domain.consensus import blocks
from meshnode.base.container import cbor
from meshnode.base.errors import MeshnodeError, IdentityError
from meshnode.base.identity.did import public_key_from_did
from meshnode.base.identity.keys import NodeKey

PROPOSAL, PREVOTE, PRECOMMIT = "proposal", "prevote", "precommit"
REQUEST, COMMIT, CATCHUP = "request", "commit", "catchup"
KINDS = (PROPOSAL, PREVOTE, PRECOMMIT, REQUEST, COMMIT, CATCHUP)
VOTES = (PREVOTE, PRECOMMIT)
MAX_VALUE = 16 * 1024
MAX_MESSAGE = 2 * 1024 * 1024  # a commit carries up to a committee's worth of precommits
MAX_COMMIT_PRECOMMITS = 4096
# data items in one message: at most 9 fields (18 items), the map, and a commit's precommits (each a
# byte string: one item); the rest of a 2 MiB frame could otherwise be two million empty arrays
MAX_MESSAGE_ITEMS = 2 * MAX_COMMIT_PRECOMMITS
MAX_ROUND = 10_000
MAX_VOTE_BYTES = 512  # a signed vote is about 250 bytes (committee id and DID at most 128 each)


class MessageError(MeshnodeError):
    """A consensus message that is malformed or not signed by its sender."""


def value_id(value: bytes) -> bytes:
    return hashlib.sha256(value).digest()


@dataclass(frozen=True)
class Message:
    kind: str
    committee: str
    height: int
    round: int
    sender: str
    value_id: bytes | None = None  # the block id (proposals, votes, commits)
    valid_round: int = -1
    value: bytes | None = None  # the block (proposals, commits, requests)
    commit: tuple[bytes, ...] = ()  # encoded precommits (commit messages)
    signature: bytes = field(default=b"", compare=False)

    def body(self) -> dict:
        out = {"t": self.kind, "c": self.committee, "h": self.height, "r": self.round, "v": self.value_id,
               "s": self.sender}
        if self.kind == PROPOSAL:
            out["vr"] = self.valid_round
        if self.value is not None:
            out["p"] = self.value
        if self.kind == COMMIT:
            out["q"] = list(self.commit)
        return out

    def signed_bytes(self) -> bytes:
        return cbor.encode(self.body())

    def encode(self) -> bytes:
        return cbor.encode({**self.body(), "sig": self.signature})

    @property
    def vote_key(self) -> tuple:
        """What a validator may say only once: (kind, height, round)."""
        return (self.kind, self.height, self.round)


def sign(key: NodeKey, kind: str, committee: str, height: int, round_: int, *, value_id: bytes | None = None,
         valid_round: int = -1, value: bytes | None = None, commit: tuple[bytes, ...] = ()) -> Message:
    unsigned = Message(kind, committee, height, round_, key.did, value_id, valid_round, value, commit)
    signature = key.sign(unsigned.signed_bytes())
    return Message(kind, committee, height, round_, key.did, value_id, valid_round, value, commit, signature)


def decode(data: bytes, *, check_signature: bool = True, sender_ok=None) -> Message:
    """A message from the wire: shape, limits and (by default) the sender's signature; then,
    if given, ``sender_ok(message)`` (the caller's committee check), and only then the block."""
    try:
        raw, _ = cbor.decode(data, max_bytes=MAX_MESSAGE, max_depth=4, max_items=MAX_MESSAGE_ITEMS)
    except MeshnodeError as exc:
        raise MessageError("bad_message", f"consensus message: {exc.reason}") from None
    if type(raw) is not dict:
        raise MessageError("bad_message", "a consensus message is a map")
    kind, committee, height, round_ = raw.get("t"), raw.get("c"), raw.get("h"), raw.get("r")
    sender, vid, sig = raw.get("s"), raw.get("v"), raw.get("sig")
    if kind not in KINDS:
        raise MessageError("bad_message", f"unknown message kind {str(kind)[:32]!r}")
    if type(committee) is not str or len(committee) > 128 or type(sender) is not str or len(sender) > 128:
        raise MessageError("bad_message", "committee and sender are short text")
    if type(height) is not int or not 0 <= height < 2**62 or type(round_) is not int or not 0 <= round_ <= MAX_ROUND:
        raise MessageError("bad_message", "height and round are small non-negative integers")
    if vid is not None and (type(vid) is not bytes or len(vid) != 32):
        raise MessageError("bad_message", "a value id is 32 bytes or null")
    if type(sig) is not bytes or len(sig) != 64:
        raise MessageError("bad_message", "a signature is 64 bytes")
    allowed = {"t", "c", "h", "r", "v", "s", "sig"} | {PROPOSAL: {"vr", "p"}, REQUEST: {"p"},
                                                        COMMIT: {"p", "q"}}.get(kind, set())
    if not set(raw) <= allowed:
        raise MessageError("bad_message", f"unexpected fields in a {kind}: {sorted(set(raw) - allowed)[:3]}")
    value = raw.get("p")
    if kind in (PROPOSAL, COMMIT, REQUEST) and type(value) is not bytes:
        raise MessageError("bad_message", f"a {kind} carries a block")
    valid_round = raw.get("vr", -1)
    if type(valid_round) is not int or not -1 <= valid_round < max(round_, 1):
        raise MessageError("bad_message", "a proposal's valid round is -1 or an earlier round")
    commit = raw.get("q", [])
    if type(commit) is not list or len(commit) > MAX_COMMIT_PRECOMMITS or any(type(x) is not bytes for x in commit):
        raise MessageError("bad_message", "a commit lists encoded precommits")
    message = Message(kind, committee, height, round_, sender, vid, valid_round, value, tuple(commit), sig)
    if check_signature:  # before the block is read: a forged message costs one signature check, not a block's
        verify_signature(message)
    if sender_ok is not None and not sender_ok(message):
        raise MessageError("not_member", f"a {kind} from {sender[:60]}, not a validator of its committee")
    if value is not None:
        try:
            block = block_id_of(value)
        except blocks.BlockError as exc:
            raise MessageError("bad_block", exc.reason) from None
        if vid != block:
            raise MessageError("bad_message", "the block id is not the Merkle root of the block's values")
    return message


class _Recent:
    """The last ``limit`` results, keyed by a digest: a cache that never holds the (up to
    512 KiB) bytes it was asked about, so distinct big blocks cannot pin memory."""

    def __init__(self, limit: int) -> None:
        self.limit, self.items = limit, OrderedDict()

    def get(self, key: bytes):
        found = self.items.get(key)
        if found is not None:
            self.items.move_to_end(key)
        return found

    def put(self, key: bytes, result) -> None:
        self.items[key] = result
        if len(self.items) > self.limit:
            self.items.popitem(last=False)


_BLOCK_VALUES = _Recent(32)  # block SHA-256 -> its values (at most 32 blocks' values held)
_BLOCK_IDS = _Recent(1024)  # block SHA-256 -> its Merkle root
_SIGNATURES = _Recent(65536)  # SHA-256 of (sender, signed bytes, signature) -> valid


def block_values(block: bytes) -> tuple[bytes, ...]:
    """The values of a block (``blocks.decode_block``), remembered by its SHA-256: the core reads
    a proposal's values on every vote it counts, and every node gets the same block bytes."""
    return _values(block, hashlib.sha256(block).digest())


def _values(block: bytes, digest: bytes) -> tuple[bytes, ...]:
    values = _BLOCK_VALUES.get(digest)
    if values is None:
        values = blocks.decode_block(block, MAX_VALUE)  # (errors are not remembered)
        _BLOCK_VALUES.put(digest, values)
    return values


def block_id_of(block: bytes) -> bytes:
    """The id of a block (its Merkle root), remembered by the block's SHA-256; BlockError if malformed."""
    digest = hashlib.sha256(block).digest()
    found = _BLOCK_IDS.get(digest)
    if found is None:
        found = blocks.block_id(_values(block, digest))
        _BLOCK_IDS.put(digest, found)
    return found


def decode_verified(data: bytes) -> Message:
    """``decode`` with the signature checked, remembered by the exact bytes: a commit's precommits
    are the same bytes at every node and in every copy of the commit, so each is parsed and
    verified once per process. Keyed by the whole encoding, so an altered copy (another sender,
    value or signature) is a different key and is checked (and refused) on its own; errors are
    not remembered. Only a vote's size is remembered (a commit's entries are votes; bigger
    bytes are decoded each time and never held)."""
    return _decode_vote(data) if len(data) <= MAX_VOTE_BYTES else decode(data)


@lru_cache(maxsize=16384)
def _decode_vote(data: bytes) -> Message:
    return decode(data)


def verify_signature(message: Message) -> None:
    if not _signature_ok(message.sender, message.signed_bytes(), message.signature):
        raise MessageError("bad_signature", f"a {message.kind} not signed by its sender {message.sender[:60]}")


def _signature_ok(sender: str, signed: bytes, signature: bytes) -> bool:
    """Validity is a pure function of the bytes, so a verified message is never verified twice
    (gossip delivers copies; a simulated mesh delivers the same bytes to every node); remembered
    by a digest, never by the signed bytes (a proposal's hold its block)."""
    key = hashlib.sha256(b"%d:%s:%s" % (len(sender), sender.encode(), signature) + signed).digest()
    found = _SIGNATURES.get(key)
    if found is None:
        try:
            VerifyKey(public_key_from_did(sender)).verify(signed, signature)
            found = True
        except (BadSignatureError, IdentityError, ValueError):
            found = False
        _SIGNATURES.put(key, found)
    return found


def check_equivocation(first: bytes, second: bytes) -> str:
    """The DID of the validator two encoded messages prove to have equivocated: both signed
    by it, for the same kind, committee, height and round, with different values.
    MessageError otherwise."""
    a, b = decode(first), decode(second)
    if a.kind not in (PROPOSAL, PREVOTE, PRECOMMIT):
        raise MessageError("not_equivocation", "only proposals and votes can equivocate")
    if (a.sender, a.kind, a.committee, a.height, a.round) != (b.sender, b.kind, b.committee, b.height, b.round):
        raise MessageError("not_equivocation", "the two messages are not one validator's for one step")
    if a.value_id == b.value_id:
        raise MessageError("not_equivocation", "the two messages agree")
    return a.sender
