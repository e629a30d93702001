"""Checking decisions without the block: a commit's quorum, and one value's inclusion proof.

A *signed commit* is the list of encoded precommits that decided a height:
each names the block id, so more than two thirds of the committee's weight
signing one (committee, height, round, block id) proves that block was
decided. An :class:`InclusionProof` then proves that one value is the
``index``-th of the ``count`` values of that block (``blocks.verify_inclusion``):
a client holding the committee, the precommits and the proof checks a
decided value without the other values of its block.

Wire form of a proof (deterministic CBOR map)::

    {"h": height, "r": round, "b": block id (32 bytes), "i": index, "n": count,
     "s": [sibling hashes, 32 bytes each, nearest the leaf first]}
"""

from __future__ import annotations

from dataclasses import dataclass

from meshnode.domain.consensus import blocks
from meshnode.domain.consensus import messages as m
from meshnode.domain.consensus.committee import Committee
from meshnode.base.container import cbor
from meshnode.base.errors import MeshnodeError


def commit_precommits(committee: Committee, height: int, round_: int, block_id: bytes,
                      encoded: tuple[bytes, ...] | list[bytes]) -> tuple[m.Message, ...]:
    """The precommits of a signed commit, each verified, from distinct validators of
    ``committee`` for (height, round, block id), weighing a quorum; MessageError otherwise."""
    weight, seen, out = 0, set(), []
    for raw in encoded:
        p = m.decode_verified(raw)
        if (p.kind != m.PRECOMMIT or p.committee != committee.id or p.height != height or p.round != round_
                or p.value_id != block_id or p.sender in seen):
            raise m.MessageError("bad_commit", "a commit's precommits are distinct validators' for its block")
        seen.add(p.sender)
        weight += committee.weight(p.sender)
        out.append(p)
    if not committee.quorum(weight):
        raise m.MessageError("bad_commit", "a commit's precommits do not weigh a quorum of the committee")
    return tuple(out)


@dataclass(frozen=True)
class InclusionProof:
    height: int
    round: int
    block_id: bytes
    index: int
    count: int
    siblings: tuple[bytes, ...]

    @classmethod
    def of(cls, height: int, round_: int, values: tuple[bytes, ...] | list[bytes], index: int) -> "InclusionProof":
        ids = [m.value_id(v) for v in values]
        return cls(height, round_, blocks.merkle_root(ids), index, len(ids), blocks.inclusion_proof(ids, index))

    def encode(self) -> bytes:
        return cbor.encode({"h": self.height, "r": self.round, "b": self.block_id, "i": self.index, "n": self.count,
                            "s": list(self.siblings)})

    @classmethod
    def decode(cls, data: bytes) -> "InclusionProof":
        try:
            raw, _ = cbor.decode(data, max_bytes=4096, max_depth=2, max_items=2 * 6 + 2 + blocks.MAX_PROOF_HASHES)
        except MeshnodeError as exc:
            raise blocks.BlockError("bad_proof", f"inclusion proof: {exc.reason}") from None
        if type(raw) is not dict or set(raw) != {"h", "r", "b", "i", "n", "s"}:
            raise blocks.BlockError("bad_proof", "an inclusion proof is a map of h, r, b, i, n, s")
        ints = [raw[k] for k in ("h", "r", "i", "n")]
        if any(type(x) is not int or x < 0 for x in ints) or type(raw["b"]) is not bytes or len(raw["b"]) != 32:
            raise blocks.BlockError("bad_proof", "an inclusion proof's numbers are non-negative, its block id 32 bytes")
        s = raw["s"]
        if type(s) is not list or len(s) > blocks.MAX_PROOF_HASHES or any(type(x) is not bytes or len(x) != 32
                                                                           for x in s):
            raise blocks.BlockError("bad_proof", "an inclusion proof's siblings are 32-byte hashes")
        return cls(raw["h"], raw["r"], raw["b"], raw["i"], raw["n"], tuple(s))


def verify_decided(committee: Committee, value: bytes, proof: InclusionProof,
                   precommits: tuple[bytes, ...] | list[bytes]) -> None:
    """That ``value`` was decided at ``proof.height``, at ``proof.index`` of its block: the signed
    commit (``precommits``) is a quorum for the proof's block id, and the value's path leads to
    it. MessageError (bad_commit) or BlockError (bad_proof) otherwise."""
    commit_precommits(committee, proof.height, proof.round, proof.block_id, precommits)
    if not blocks.verify_inclusion(proof.block_id, value, proof.index, proof.count, proof.siblings):
        raise blocks.BlockError("bad_proof", "the value's path does not lead to the committed block id")
