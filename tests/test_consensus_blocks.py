"""Blocks: a height decides a batch of values; each value's inclusion is provable from the signed
commit; a batch is decided once and in one order on every node, whatever the delivery order."""

from __future__ import annotations

import hashlib
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meshnode.domain.consensus import blocks
from meshnode.domain.consensus import messages as m
from meshnode.domain.consensus.committee import Committee
from meshnode.domain.consensus import proofs
from meshnode.domain.consensus.proofs import InclusionProof, verify_decided
from meshnode.domain.consensus.tendermint import ANNOUNCE, BlockLimits, Broadcast, Core, Decide, Schedule, Timeouts
from meshnode.base.identity.keys import NodeKey
from test_consensus_core import run_synchronously

KEYS = [NodeKey(hashlib.sha256(b"blocks-%d" % i).digest()) for i in range(5)]
COMMITTEE = Committee.of({k.did: 1 for k in KEYS[:4]})


# --- the Merkle tree and inclusion proofs ----------------------------------------------------


@given(st.lists(st.binary(max_size=40), min_size=1, max_size=40, unique=True))
def test_every_value_of_a_block_has_a_proof_that_checks_and_only_for_it(values):
    ids = [m.value_id(v) for v in values]
    root = blocks.merkle_root(ids)
    assert blocks.block_id(values) == root
    for i, v in enumerate(values):
        path = blocks.inclusion_proof(ids, i)
        assert blocks.verify_inclusion(root, v, i, len(values), path)
        assert not blocks.verify_inclusion(root, v + b"!", i, len(values), path)
        if len(values) > 1:
            assert not blocks.verify_inclusion(root, v, (i + 1) % len(values), len(values), path)
            assert not blocks.verify_inclusion(root, v, i, len(values), path[:-1])


def test_the_root_follows_rfc_6962_for_three_leaves():
    a, b, c = (hashlib.sha256(x).digest() for x in (b"a", b"b", b"c"))
    leaf = [hashlib.sha256(b"\x00" + x).digest() for x in (a, b, c)]
    inner = hashlib.sha256(b"\x01" + leaf[0] + leaf[1]).digest()
    assert blocks.merkle_root([a, b, c]) == hashlib.sha256(b"\x01" + inner + leaf[2]).digest()


def _decided_block(values: list[bytes]) -> tuple[Decide, list[Core]]:
    cores = [Core(k, COMMITTEE) for k in KEYS[:4]]
    for v in values:  # asked everywhere before anything is proposed, so one block holds them all
        for core in cores:
            core._add_pending(v)
    decided = run_synchronously(cores, [(i, core.resume(0)) for i, core in enumerate(cores)])
    assert all(len(decided[i]) == 1 for i in range(4))
    return decided[0][0], cores


def test_a_value_s_inclusion_checks_against_the_signed_commit_alone_and_tampering_fails():
    values = [b"pay alice 5", b"pay bob 7", b"pay carol 1"]
    d, cores = _decided_block(values)
    assert d.values == tuple(values)
    precommits = [p.encode() for p in d.precommits]
    proof = InclusionProof.of(d.height, d.round, d.values, 1)
    wire = InclusionProof.decode(proof.encode())
    assert wire == proof
    verify_decided(COMMITTEE, b"pay bob 7", wire, precommits)  # the client has no block, only these
    with pytest.raises(blocks.BlockError, match="path"):
        verify_decided(COMMITTEE, b"pay bob 700", wire, precommits)  # another value
    with pytest.raises(blocks.BlockError, match="path"):
        verify_decided(COMMITTEE, b"pay bob 7", InclusionProof(**{**wire.__dict__, "index": 2}), precommits)
    bad_sibling = (bytes(32),) + wire.siblings[1:]
    with pytest.raises(blocks.BlockError, match="path"):
        verify_decided(COMMITTEE, b"pay bob 7", InclusionProof(**{**wire.__dict__, "siblings": bad_sibling}),
                       precommits)
    other_root = blocks.block_id([b"pay bob 7", b"pay mallory 1000"])  # a block no quorum signed
    forged = InclusionProof(d.height, d.round, other_root, 0, 2, blocks.inclusion_proof(
        [m.value_id(b"pay bob 7"), m.value_id(b"pay mallory 1000")], 0))
    with pytest.raises(m.MessageError, match="for its block"):
        verify_decided(COMMITTEE, b"pay bob 7", forged, precommits)
    with pytest.raises(m.MessageError, match="quorum"):
        verify_decided(COMMITTEE, b"pay bob 7", wire, precommits[:2])
    with pytest.raises(blocks.BlockError):
        InclusionProof.decode(proof.encode()[:-1])


def test_a_block_is_refused_on_the_wire_when_its_id_or_shape_is_wrong():
    block = blocks.encode_block([b"x", b"y"])
    with pytest.raises(m.MessageError, match="Merkle root"):
        m.decode(m.sign(KEYS[0], m.PROPOSAL, "c", 0, 0, value_id=m.value_id(block), value=block).encode())
    twice = blocks.encode_block([b"x", b"x"])
    with pytest.raises(m.MessageError, match="once"):
        m.decode(m.sign(KEYS[0], m.PROPOSAL, "c", 0, 0, value_id=bytes(32), value=twice).encode())
    with pytest.raises(m.MessageError, match="array"):
        m.decode(m.sign(KEYS[0], m.PROPOSAL, "c", 0, 0, value_id=bytes(32), value=blocks.encode_block([])).encode())


# --- the core batches ------------------------------------------------------------------------


def test_a_proposer_batches_what_is_pending_within_its_limits_and_carries_the_rest_over():
    limits = BlockLimits(values=3, bytes=m.MAX_VALUE + 16)
    cores = [Core(k, COMMITTEE, block_limits=limits) for k in KEYS[:4]]
    values = [b"v%d" % i for i in range(7)]
    for v in values:
        for core in cores:
            core._add_pending(v)
    decided = run_synchronously(cores, [(i, core.resume(0)) for i, core in enumerate(cores)])
    blocks_seen = [d.values for d in decided[0]]
    assert blocks_seen == [tuple(values[0:3]), tuple(values[3:6]), (values[6],)]
    assert all([d.block for d in decided[i]] == [d.block for d in decided[0]] for i in range(4))
    assert all(not core.pending and core.height == 3 for core in cores)
    big = [bytes([i]) * 9000 for i in range(3)]  # two of 9000 bytes do not fit 16 KiB: one per block
    core = Core(KEYS[0], COMMITTEE, block_limits=limits)
    for v in big:
        core._add_pending(v)
    assert core._next_block() == blocks.encode_block(big[:1])


def test_a_block_holding_a_value_already_decided_gets_nil_prevotes():
    cores = [Core(k, COMMITTEE) for k in KEYS[:4]]
    run_synchronously(cores, [(0, cores[0].submit(b"once", 0))])
    proposer = next(k for k in KEYS[:4] if k.did == COMMITTEE.proposer(1, 0))
    block = blocks.encode_block([b"new", b"once"])
    again = m.sign(proposer, m.PROPOSAL, COMMITTEE.id, 1, 0, value_id=m.block_id_of(block), value=block)
    voter = next(c for c in cores if c.key is not proposer)
    voter.h.step = "propose"
    prevotes = [a.message for a in voter.receive(again, 0) if isinstance(a, Broadcast) and a.message.kind == m.PREVOTE]
    assert prevotes and prevotes[0].value_id is None


def test_values_asked_together_go_out_as_one_request():
    """The first value at once (no wait for a value asked alone); those asked within
    request_batch_ms after it, together."""
    def requests(actions):
        return [m.block_values(a.message.value) for a in actions
                if isinstance(a, Broadcast) and a.message.kind == m.REQUEST]

    core = Core(KEYS[0], COMMITTEE, timeouts=Timeouts(request_batch_ms=10))
    assert requests(core.submit(b"a", 100)) == [(b"a",)]
    out = core.submit(b"b", 103) + core.submit(b"c", 105) + core.submit(b"d", 108)
    assert [a for a in out if isinstance(a, Schedule) and a.step == ANNOUNCE] == [Schedule(ANNOUNCE, 0, 0, 110)]
    assert not requests(out)
    sent = [a.message for a in core.timeout(ANNOUNCE, 0, 0, 110) if isinstance(a, Broadcast)]
    assert requests([Broadcast(x) for x in sent]) == [(b"b", b"c", b"d")]
    other = Core(KEYS[1], COMMITTEE)
    other.receive(m.decode(sent[0].encode()), 111)
    assert list(other.pending.values()) == [b"b", b"c", b"d"]
    assert not requests(core.timeout(ANNOUNCE, 0, 0, 120))  # nothing new to say
    assert requests(core.submit(b"e", 200)) == [(b"e",)]  # quiet for a while: at once again


@st.composite
def schedules(draw):
    n_values = draw(st.integers(1, 12))
    asks = [(draw(st.integers(0, 3)), draw(st.integers(0, 400))) for _ in range(n_values)]  # (node, step)
    return {"asks": asks, "seed": draw(st.integers(0, 2**32)), "drop": draw(st.sampled_from([0.0, 0.1, 0.3])),
            "limit": draw(st.integers(1, 5)), "batch_ms": draw(st.sampled_from([0, 10, 50]))}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schedules())
def test_blocks_are_decided_once_and_in_one_order_on_every_node_whatever_the_delivery(plan):
    """Four honest cores, values asked at random nodes and moments, messages delivered in a random
    order (some lost, some late), timers fired at random: at every height every node that decided
    holds the same block, no value is in two heights, and once delivery is reliable all decide all."""
    rnd = random.Random(plan["seed"])
    cores = [Core(k, COMMITTEE, block_limits=BlockLimits(values=plan["limit"]),
                  timeouts=Timeouts(request_batch_ms=plan["batch_ms"])) for k in KEYS[:4]]
    inflight: list[tuple[int, m.Message]] = []
    timers: list[tuple[int, Schedule]] = []
    blocks_at: dict[int, bytes] = {}
    height_of: dict[bytes, int] = {}
    now = 0

    def take(i, actions):
        for a in actions:
            if isinstance(a, Broadcast):
                inflight.extend((j, a.message) for j in range(4) if j != i)
            elif isinstance(a, Schedule):
                timers.append((i, a))
            elif isinstance(a, Decide):
                assert blocks_at.setdefault(a.height, a.block) == a.block, f"two blocks at height {a.height}"
                for v in a.values:
                    assert height_of.setdefault(v, a.height) == a.height, f"{v!r} decided twice"

    values = [b"value %d" % k for k in range(len(plan["asks"]))]
    asks = sorted((step, node, v) for (node, step), v in zip(plan["asks"], values))
    for step in range(4000):
        now += 10
        lossy = step < 1500
        while asks and asks[0][0] <= step:
            _, node, v = asks.pop(0)
            take(node, cores[node].submit(v, now))
        if inflight and rnd.random() < 0.8:
            j, msg = inflight.pop(rnd.randrange(len(inflight)))  # any order
            if not (lossy and rnd.random() < plan["drop"]):
                take(j, cores[j].receive(m.decode(msg.encode()), now))
        due = [t for t in timers if t[1].at_ms <= now]
        if due and rnd.random() < 0.5:
            t = rnd.choice(due)
            timers.remove(t)
            i, s = t
            take(i, cores[i].timeout(s.step, s.height, s.round, now))
        if not asks and not inflight and all(set(values) <= set(height_of) for _ in (0,)) \
                and len({c.height for c in cores}) == 1:
            break
    assert set(height_of) == set(values), "every value asked is decided"
    assert all(c.height == max(blocks_at) + 1 for c in cores)


# --- the store -------------------------------------------------------------------------------


def test_the_store_gives_back_each_height_s_block_and_keeps_decisions_from_before_blocks(tmp_path):
    import sqlite3

    from meshnode.base.container import cbor
    from meshnode.store import Database, decisions
    from meshnode.store import migrate as migrate_module

    path = tmp_path / "data" / "meshnode.db"
    path.parent.mkdir(parents=True)
    conn = sqlite3.connect(path, isolation_level=None)  # a database of the last schema before blocks
    steps = migrate_module.migrations()[:20]
    conn.executescript("BEGIN;\n" + ";\n".join(sql for _, _, sql in steps) + "\n;PRAGMA user_version = 20;\nCOMMIT;")
    conn.execute("INSERT INTO consensus_decisions VALUES ('e0-c', 0, ?, 1, ?, 1000)", (b"old value", cbor.encode([])))
    conn.close()
    db = Database(path)
    try:
        decisions.save_decision(db, "e0-c", 1, [b"x", b"y", b"z"], 0, [b"p1", b"p2"], 2000)
        assert decisions.place_of(db, b"y") == (1, 1) and decisions.place_of(db, b"old value") == (0, 0)
        assert decisions.block_of(db, "e0-c", 1) == ([b"x", b"y", b"z"], 0, [b"p1", b"p2"])
        assert decisions.recent_decisions(db, "e0-c", 64) == [
            (0, blocks.encode_block([b"old value"]), 1, []),
            (1, blocks.encode_block([b"x", b"y", b"z"]), 0, [b"p1", b"p2"])]
        assert decisions.recent_decisions(db, "e0-c", 1)[0][0] == 1  # the newest heights, not rows
        assert decisions.next_height(db) == 2
        assert decisions.decided_value_ids(db) == {m.value_id(v) for v in (b"old value", b"x", b"y", b"z")}
    finally:
        db.close()


def test_the_block_vectors_of_the_protocol_document_hold():
    """protocols/vectors/consensus_blocks.json: block encodings, ids and inclusion proofs that any
    implementation must reproduce (made once from this code, checked here against it)."""
    import json
    from pathlib import Path

    doc = json.loads((Path(__file__).resolve().parents[1] / "protocols" / "vectors" / "consensus_blocks.json")
                     .read_text(encoding="utf-8"))
    for case in doc["cases"]:
        values = [v.encode() for v in case["values_utf8"]]
        root = bytes.fromhex(case["block_id"])
        assert blocks.encode_block(values).hex() == case["block_cbor"]
        assert blocks.block_id(values) == root
        for p in case["proofs"]:
            proof = InclusionProof.decode(bytes.fromhex(p["proof_cbor"]))
            assert [s.hex() for s in proof.siblings] == p["siblings"]
            assert (proof.height, proof.round, proof.block_id, proof.count) == (case["height"], case["round"], root,
                                                                                 len(values))
            assert blocks.verify_inclusion(root, values[p["index"]], p["index"], len(values), proof.siblings)


def test_a_value_asked_again_before_its_announcement_goes_out_once():
    """A client retrying ``consensus submit`` within request_batch_ms: the request holds the
    value once (a block with a value twice is refused by every node, and used to raise here)."""
    core = Core(KEYS[0], COMMITTEE, timeouts=Timeouts(request_batch_ms=50))
    core.submit(b"a", 0)
    core.submit(b"b", 10)
    core.submit(b"b", 20)
    core.submit(b"a", 30)  # already announced and pending: not asked again
    sent = [a.message for a in core.timeout(ANNOUNCE, 0, 0, 50) if isinstance(a, Broadcast)]
    assert [m.block_values(x.value) for x in sent if x.kind == m.REQUEST] == [(b"b",)]
    assert list(core.pending.values()) == [b"a", b"b"]
    assert not core.timeout(ANNOUNCE, 0, 0, 100)  # nothing left over


def test_a_forged_request_is_refused_before_its_block_is_read_and_no_cache_holds_block_bytes(monkeypatch):
    """A message claiming any sender, with a big block: the signature is checked first, so a
    forger costs one signature check, and the caches hold digests, never the block."""
    values = [b"%05d" % i + b"x" * 100 for i in range(4000)]
    big = blocks.encode_block(values)
    real = m.sign(KEYS[0], m.REQUEST, COMMITTEE.id, 0, 0, value_id=blocks.block_id(values), value=big)
    forged = m.Message(m.REQUEST, COMMITTEE.id, 0, 0, KEYS[1].did, real.value_id, value=big,
                       signature=real.signature)
    reads = []
    decode_block = blocks.decode_block
    monkeypatch.setattr(blocks, "decode_block", lambda *a: reads.append(1) or decode_block(*a))
    with pytest.raises(m.MessageError) as refused:
        m.decode(forged.encode())
    assert refused.value.code == "bad_signature" and not reads
    fresh = blocks.encode_block([b"fresh-%d" % i for i in range(50)])
    m.decode(m.sign(KEYS[0], m.REQUEST, COMMITTEE.id, 0, 0, value_id=blocks.block_id(
        [b"fresh-%d" % i for i in range(50)]), value=fresh).encode())
    assert reads  # (a good one is read)
    held = [k for cache in (m._BLOCK_VALUES, m._BLOCK_IDS, m._SIGNATURES) for k in cache.items]
    assert held and all(len(k) == 32 for k in held)


def test_a_height_decided_before_blocks_is_not_served_as_a_commit_that_would_be_refused():
    """Protocol-1 precommits sign the value's SHA-256, not the block id: the restarted node
    keeps the decision but makes no commit from it (one every node would refuse)."""
    old = [m.sign(k, m.PRECOMMIT, COMMITTEE.id, 0, 0, value_id=m.value_id(b"old")) for k in KEYS[:3]]
    new_block = blocks.encode_block([b"new"])
    new = [m.sign(k, m.PRECOMMIT, COMMITTEE.id, 1, 0, value_id=m.block_id_of(new_block)) for k in KEYS[:3]]
    core = Core(KEYS[0], COMMITTEE, height=2, recent=(Decide(0, blocks.encode_block([b"old"]), 0, tuple(old)),
                                                      Decide(1, new_block, 0, tuple(new))))
    assert core.commit_message(0) is None
    served = core.commit_message(1)
    assert served is not None and len(proofs.commit_precommits(COMMITTEE, 1, 0, served.value_id, served.commit)) == 3


def test_a_request_from_outside_the_committee_is_refused_before_its_block_is_read(monkeypatch):
    values = [b"outsider-%d" % i for i in range(100)]
    outsider = m.sign(KEYS[4], m.REQUEST, COMMITTEE.id, 0, 0, value_id=blocks.block_id(values),
                      value=blocks.encode_block(values))
    reads = []
    decode_block = blocks.decode_block
    monkeypatch.setattr(blocks, "decode_block", lambda *a: reads.append(1) or decode_block(*a))
    with pytest.raises(m.MessageError) as refused:
        m.decode(outsider.encode(), sender_ok=lambda msg: COMMITTEE.weight(msg.sender) > 0)
    assert refused.value.code == "not_member" and not reads
    assert m.decode(outsider.encode()).sender == KEYS[4].did and reads  # (without the check: read, and good)


def test_values_waiting_for_the_batch_go_out_with_the_node_s_next_vote():
    """A value asked while the last request is recent waits for request_batch_ms, unless this
    node sends a proposal or vote before: then it goes along (one gossip message, not two),
    and the batch's timer finds nothing left to say."""
    me = next(k for k in KEYS[:4] if k.did != COMMITTEE.proposer(0, 0))
    proposer = next(k for k in KEYS[:4] if k.did == COMMITTEE.proposer(0, 0))
    core = Core(me, COMMITTEE, timeouts=Timeouts(request_batch_ms=50))
    core.submit(b"a", 0)
    assert not [a for a in core.submit(b"b", 10) if isinstance(a, Broadcast)]
    proposal = m.sign(proposer, m.PROPOSAL, COMMITTEE.id, 0, 0, value_id=blocks.block_id([b"a"]),
                      value=blocks.encode_block([b"a"]))
    said = [a.message for a in core.receive(m.decode(proposal.encode()), 20) if isinstance(a, Broadcast)]
    assert [x.kind for x in said] == [m.PREVOTE, m.REQUEST]
    assert m.block_values(said[1].value) == (b"b",)
    assert not core.timeout(ANNOUNCE, 0, 0, 50)


def test_values_held_back_for_the_batch_at_an_epoch_switch_are_asked_of_the_new_committee():
    """Before take_over, the old core's batch announcement named the old committee, whose messages
    every node drops once it has switched: the values stayed pending here and no one else heard of them."""
    old = Core(KEYS[0], COMMITTEE, timeouts=Timeouts(request_batch_ms=50))
    old.submit(b"a", 0)  # announced at once
    old.submit(b"b", 10)
    old.submit(b"c", 20)  # b and c wait for the batch
    new_committee = Committee.of({k.did: 1 for k in KEYS[1:5]}, epoch=1)
    new = Core(KEYS[0], new_committee, timeouts=Timeouts(request_batch_ms=50), height=5, decided_ids=old.decided_ids)
    out = new.take_over(old, 30)
    asked = [a.message for a in out if isinstance(a, Broadcast) and a.message.kind == m.REQUEST]
    assert [(x.committee, m.block_values(x.value)) for x in asked] == [(new_committee.id, (b"b", b"c"))]
    assert list(new.pending.values()) == [b"a", b"b", b"c"]
    assert not [a for a in old.timeout(ANNOUNCE, 0, 0, 60) if isinstance(a, Broadcast)]  # the old core says nothing
