"""Blocks: the values one height decides, and proofs that a value is in a decided block.

A block is the deterministic CBOR array of its values (byte strings), in the
order the proposer put them. Its id — what proposals, votes and commits name,
and what every precommit signs — is the Merkle root over the values'
SHA-256 hashes, built as in RFC 6962 (section 2.1): a leaf is
``SHA-256(0x00 || SHA-256(value))``, an inner node
``SHA-256(0x01 || left || right)``, and a list of n > 1 leaves splits at the
largest power of two below n. So a client that holds only a signed commit
(the precommits of a quorum, naming the block id) can check that one value
was decided at that height, at that index, from the value, its index, the
block's size and the sibling hashes on the way to the root
(:func:`inclusion_proof`, :func:`verify_inclusion`), without the block.
"""

from __future__ import annotations

import hashlib

from meshnode.base.container import cbor
from meshnode.base.errors import MeshnodeError

MAX_BLOCK_VALUES = 4096  # a wire limit: what any block may hold (the node's own limits are its config)
MAX_BLOCK_BYTES = 512 * 1024  # a block's encoding; with a commit's precommits it stays under a 1 MiB gossip frame
MAX_PROOF_HASHES = 64


class BlockError(MeshnodeError):
    """A block or an inclusion proof that is malformed or does not check out."""


def encode_block(values: list[bytes] | tuple[bytes, ...]) -> bytes:
    return cbor.encode(list(values))


def decode_block(data: bytes, max_value: int) -> tuple[bytes, ...]:
    """The values of a block from the wire: a non-empty array of distinct byte strings,
    each at most ``max_value`` bytes, within the wire limits."""
    if len(data) > MAX_BLOCK_BYTES:
        raise BlockError("bad_block", f"a block is at most {MAX_BLOCK_BYTES} bytes")
    try:
        raw, _ = cbor.decode(data, max_bytes=MAX_BLOCK_BYTES, max_depth=1, max_items=MAX_BLOCK_VALUES + 1)
    except MeshnodeError as exc:
        raise BlockError("bad_block", f"block: {exc.reason}") from None
    if type(raw) is not list or not 1 <= len(raw) <= MAX_BLOCK_VALUES:
        raise BlockError("bad_block", f"a block is an array of 1 to {MAX_BLOCK_VALUES} values")
    if any(type(v) is not bytes or len(v) > max_value for v in raw):
        raise BlockError("bad_block", f"a block's values are byte strings of at most {max_value} bytes")
    if len({hashlib.sha256(v).digest() for v in raw}) != len(raw):
        raise BlockError("bad_block", "a block holds each value once")
    return tuple(raw)


def leaf_hash(value_id: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + value_id).digest()


def _node(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two below ``n`` (n > 1)."""
    return 1 << ((n - 1).bit_length() - 1)


def _root(leaves: list[bytes]) -> bytes:
    if len(leaves) == 1:
        return leaves[0]
    k = _split(len(leaves))
    return _node(_root(leaves[:k]), _root(leaves[k:]))


def merkle_root(value_ids: list[bytes] | tuple[bytes, ...]) -> bytes:
    if not value_ids:
        raise BlockError("bad_block", "an empty block has no id")
    return _root([leaf_hash(v) for v in value_ids])


def block_id(values: list[bytes] | tuple[bytes, ...]) -> bytes:
    return merkle_root([hashlib.sha256(v).digest() for v in values])


def inclusion_proof(value_ids: list[bytes] | tuple[bytes, ...], index: int) -> tuple[bytes, ...]:
    """The sibling hashes from leaf ``index`` up to the root (RFC 6962 PATH), nearest first."""
    if not 0 <= index < len(value_ids):
        raise BlockError("bad_proof", f"index {index} is outside a block of {len(value_ids)}")
    return tuple(_path(index, [leaf_hash(v) for v in value_ids]))


def _path(m: int, leaves: list[bytes]) -> list[bytes]:
    if len(leaves) == 1:
        return []
    k = _split(len(leaves))
    if m < k:
        return _path(m, leaves[:k]) + [_root(leaves[k:])]
    return _path(m - k, leaves[k:]) + [_root(leaves[:k])]


def verify_inclusion(root: bytes, value: bytes, index: int, count: int,
                     siblings: tuple[bytes, ...] | list[bytes]) -> bool:
    """Whether ``value`` is the ``index``-th of ``count`` values of the block whose id is ``root``
    (RFC 9162, 2.1.3.2). Any malformed input is simply not a proof."""
    if type(root) is not bytes or type(value) is not bytes or type(index) is not int or type(count) is not int:
        return False
    if not 0 <= index < count or len(siblings) > MAX_PROOF_HASHES:
        return False
    if any(type(s) is not bytes or len(s) != 32 for s in siblings):
        return False
    fn, sn = index, count - 1
    r = leaf_hash(hashlib.sha256(value).digest())
    for p in siblings:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = _node(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn, sn = fn >> 1, sn >> 1
        else:
            r = _node(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root
