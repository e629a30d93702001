"""The BFT core by itself: messages, quorums, locking, evidence, commits, catch-up (emergencies:
test_consensus_emergency.py)."""

from __future__ import annotations

import hashlib

import pytest

from meshnode.domain.consensus import messages as m
from meshnode.domain.consensus.blocks import block_id, encode_block
from meshnode.domain.consensus.committee import Committee, weights_from_trust
from meshnode.domain.consensus.tendermint import Broadcast, Core, Decide, Evidence
from meshnode.base.identity.keys import NodeKey

KEYS = [NodeKey(hashlib.sha256(b"core-%d" % i).digest()) for i in range(5)]
COMMITTEE = Committee.of({k.did: 1 for k in KEYS[:4]})


def blk(*values: bytes) -> dict:
    """The id and bytes of the block of ``values``, as proposal and commit fields."""
    return {"value_id": block_id(values), "value": encode_block(values)}


def run_synchronously(cores, first_actions, drop=lambda sender, receiver, msg: False, limit=10_000):
    """Deliver every broadcast to every other core at once, in order; returns decisions per core."""
    decided = {i: [] for i in range(len(cores))}
    queue = [(i, a) for i, actions in first_actions for a in actions]
    while queue and limit:
        limit -= 1
        i, action = queue.pop(0)
        if isinstance(action, Decide):
            decided[i].append(action)
        if isinstance(action, Broadcast):
            for j, core in enumerate(cores):
                if j != i and not drop(i, j, action.message):
                    wire = m.decode(action.message.encode())  # through the real bytes
                    queue += [(j, a) for a in core.receive(wire, 0)]
    return decided


def test_messages_round_trip_and_refuse_forgeries():
    msg = m.sign(KEYS[0], m.PROPOSAL, "c", 3, 1, valid_round=0, **blk(b"v"))
    assert m.decode(msg.encode()) == msg
    forged = m.Message(m.PREVOTE, "c", 3, 1, KEYS[1].did, signature=msg.signature).encode()
    with pytest.raises(m.MessageError, match="not signed by its sender"):
        m.decode(forged)
    with pytest.raises(m.MessageError, match="Merkle root"):
        m.decode(m.sign(KEYS[0], m.PROPOSAL, "c", 3, 1, value_id=bytes(32), value=encode_block([b"v"])).encode())
    with pytest.raises(m.MessageError):
        m.decode(b"\xa1\x61t\x61x")


def test_committee_quorums_are_exact_and_proposers_follow_weight():
    c = Committee.of({"a": 1, "b": 1, "c": 1, "d": 1})
    assert not c.quorum(2) and c.quorum(3) and not c.third(1) and c.third(2)
    heavy = Committee.of({"a": 97, "b": 1, "c": 1, "d": 1})
    picks = [heavy.proposer(h, 0) for h in range(400)]
    assert picks.count("a") > 300
    assert weights_from_trust({"x": 0.9, "y": 0.6, "sybil": 0.01, "fresh": 0.5}) == {"x": 900, "y": 600}


def test_four_honest_validators_decide_the_same_value():
    cores = [Core(k, COMMITTEE) for k in KEYS[:4]]
    decided = run_synchronously(cores, [(0, cores[0].submit(b"hello", 0))])
    assert all([v for d in decided[i] for v in d.values] == [b"hello"] for i in range(4))
    assert all(core.height == 1 for core in cores)
    assert COMMITTEE.quorum(sum(COMMITTEE.weight(p.sender) for p in decided[0][0].precommits))


def test_one_silent_validator_of_four_does_not_stop_decisions():
    cores = [Core(k, COMMITTEE) for k in KEYS[:4]]
    silent = 3
    decided = run_synchronously(cores, [(0, cores[0].submit(b"v1", 0))],
                                drop=lambda i, j, msg: silent in (i, j))
    for i in range(3):
        assert [v for d in decided[i] for v in d.values] == [b"v1"] or cores[i].height == 0
    # the proposer may be the silent one: then round changes carry the decision, driven by timeouts
    now = 0
    while any(cores[i].height == 0 for i in range(3)) and now < 60_000:
        now += 100
        for i in range(3):
            for action in cores[i].timeout("propose", 0, cores[i].h.round, now) + \
                    cores[i].timeout("prevote", 0, cores[i].h.round, now) + \
                    cores[i].timeout("precommit", 0, cores[i].h.round, now):
                run_synchronously(cores, [(i, [action])], drop=lambda a, b, msg: silent in (a, b))
    assert all(cores[i].height == 1 for i in range(3))


def test_conflicting_votes_become_evidence_once():
    core = Core(KEYS[0], COMMITTEE)
    a = m.sign(KEYS[1], m.PREVOTE, COMMITTEE.id, 0, 0, value_id=m.value_id(b"x"))
    b = m.sign(KEYS[1], m.PREVOTE, COMMITTEE.id, 0, 0, value_id=m.value_id(b"y"))
    c = m.sign(KEYS[1], m.PRECOMMIT, COMMITTEE.id, 0, 0, value_id=None)
    core.receive(a, 0)
    evidence = [x for x in core.receive(b, 0) if isinstance(x, Evidence)]
    assert evidence == [Evidence(a, b)]
    assert m.decode(evidence[0].first.encode()).sender == m.decode(evidence[0].second.encode()).sender
    assert not [x for x in core.receive(c, 0) if isinstance(x, Evidence)]


def test_equivocation_evidence_is_checkable_by_anyone():
    a = m.sign(KEYS[1], m.PRECOMMIT, COMMITTEE.id, 4, 2, value_id=m.value_id(b"x"))
    b = m.sign(KEYS[1], m.PRECOMMIT, COMMITTEE.id, 4, 2, value_id=None)
    assert m.check_equivocation(a.encode(), b.encode()) == KEYS[1].did
    other_round = m.sign(KEYS[1], m.PRECOMMIT, COMMITTEE.id, 4, 3, value_id=None)
    someone_else = m.sign(KEYS[2], m.PRECOMMIT, COMMITTEE.id, 4, 2, value_id=None)
    for second, reason in ((a, "agree"), (other_round, "not one validator"), (someone_else, "not one validator")):
        with pytest.raises(m.MessageError, match=reason):
            m.check_equivocation(a.encode(), second.encode())


def test_votes_from_outside_the_committee_carry_no_weight():
    core = Core(KEYS[0], COMMITTEE)
    outsider = KEYS[4]
    for kind in (m.PREVOTE, m.PRECOMMIT):
        core.receive(m.sign(outsider, kind, COMMITTEE.id, 0, 0, value_id=m.value_id(b"x")), 0)
    assert core.height == 0 and not core.h.votes


def test_a_locked_validator_prevotes_nil_for_another_value():
    core = Core(KEYS[0], COMMITTEE)
    core.h.locked_value, core.h.locked_round = b"locked", 0
    core.h.round, core.h.step = 1, "propose"
    proposer = next(k for k in KEYS[:4] if k.did == COMMITTEE.proposer(0, 1))
    if proposer is KEYS[0]:
        pytest.skip("this committee makes us the proposer of round 1")
    other = m.sign(proposer, m.PROPOSAL, COMMITTEE.id, 0, 1, **blk(b"other"))
    out = core.receive(other, 0)
    prevotes = [a.message for a in out if isinstance(a, Broadcast) and a.message.kind == m.PREVOTE]
    assert prevotes and prevotes[0].value_id is None


def test_a_node_behind_catches_up_from_a_commit_and_rejects_a_short_one():
    cores = [Core(k, COMMITTEE) for k in KEYS[:4]]
    decided = run_synchronously(cores[:3] + [Core(KEYS[3], COMMITTEE)], [(0, cores[0].submit(b"v", 0))],
                                drop=lambda i, j, msg: 3 in (i, j))
    d = decided[0][0]
    late = Core(KEYS[3], COMMITTEE)
    short = m.sign(KEYS[0], m.COMMIT, COMMITTEE.id, 0, d.round, **blk(b"v"),
                   commit=tuple(p.encode() for p in d.precommits[:2]))
    assert not [a for a in late.receive(m.decode(short.encode()), 0) if isinstance(a, Decide)]
    full = m.sign(KEYS[0], m.COMMIT, COMMITTEE.id, 0, d.round, **blk(b"v"),
                  commit=tuple(p.encode() for p in d.precommits))
    assert [v for a in late.receive(m.decode(full.encode()), 0) if isinstance(a, Decide) for v in a.values] == [b"v"]
    assert late.height == 1


def test_a_value_is_decided_once_however_often_it_is_requested():
    cores = [Core(k, COMMITTEE) for k in KEYS[:4]]
    run_synchronously(cores, [(0, cores[0].submit(b"once", 0))])
    assert all(c.height == 1 for c in cores)
    replayed = m.sign(KEYS[0], m.REQUEST, COMMITTEE.id, 0, 0, **blk(b"once"))  # gossip replays an old request
    fresh = Core(KEYS[3], COMMITTEE, height=1, decided_ids={m.value_id(b"once")})  # restarted from its store
    for core in cores[:3] + [fresh]:
        core.receive(replayed, 0)
        assert not core.pending and core.h.step == "idle"
    # and a proposer that proposes it again anyway gets nil prevotes
    proposer = next(k for k in KEYS[:4] if k.did == COMMITTEE.proposer(1, 0))
    again = m.sign(proposer, m.PROPOSAL, COMMITTEE.id, 1, 0, **blk(b"once"))
    voter = next(c for c in cores if c.key is not proposer)
    voter.h.step = "propose"
    prevotes = [a.message for a in voter.receive(again, 0) if isinstance(a, Broadcast) and a.message.kind == m.PREVOTE]
    assert prevotes and prevotes[0].value_id is None


def _decide_without(absent: int, values: list[bytes]) -> list[Core]:
    """Cores 0-3, where ``absent`` hears nothing while the others decide ``values`` in turn."""
    cores = [Core(k, COMMITTEE) for k in KEYS[:4]]
    for v in values:
        run_synchronously(cores, [(0, cores[0].submit(v, 0))], drop=lambda i, j, msg: absent in (i, j))
    return cores


def test_a_node_that_joins_asks_for_missed_commits_without_a_new_proposal():
    values = [b"v%d" % i for i in range(6)]  # more than one answer's worth (FUTURE_HEIGHTS)
    cores = _decide_without(3, values)
    assert [c.height for c in cores] == [6, 6, 6, 0]
    joined = cores[3].join(0)  # back on the mesh: nothing new is proposed, it asks by itself
    assert [a.message.kind for a in joined if isinstance(a, Broadcast)] == [m.CATCHUP]
    decided = run_synchronously(cores, [(3, joined)])
    assert [v for d in decided[3] for v in d.values] == values and all(d.from_commit for d in decided[3])
    assert cores[3].height == 6 and not decided[0]  # the others only answered


def test_a_restarted_node_answers_catch_ups_from_stored_commits():
    cores = _decide_without(3, [b"a", b"b"])
    restarted = Core(KEYS[0], COMMITTEE, height=2, recent=tuple(cores[0].decided[h] for h in (0, 1)))
    answers = restarted.receive(m.decode(cores[3].join(0)[0].message.encode()), 0)
    late = cores[3]
    got = [a for b in answers if isinstance(b, Broadcast) for a in late.receive(m.decode(b.message.encode()), 0)]
    assert [v for a in got if isinstance(a, Decide) for v in a.values] == [b"a", b"b"] and late.height == 2


def test_a_node_asked_by_one_further_along_learns_it_is_behind():
    cores = _decide_without(3, [b"x"])
    ask = cores[0].join(0)[0].message  # a catch-up for height 1 tells core 3 (at 0) it missed something
    out = cores[3].receive(m.decode(ask.encode()), 0)
    assert [(a.message.kind, a.message.height) for a in out if isinstance(a, Broadcast)] == [(m.CATCHUP, 0)]
