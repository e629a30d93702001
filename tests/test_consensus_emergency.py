"""Emergency mode of the BFT core (protocols/consensus.md 6): a height undecided for
``emergency_after_ms`` gets a provisional decision only on a side of a partition that holds at
least half of the committee's weight (a 2/2 split: each side); a minority (a lone validator of
four, issue 35 defect 10) records none, only that it has no quorum, and looks again later.

A rule-based state machine (hypothesis) drives one core of a four-validator committee: others'
votes arrive from any subset of validators in any round, rounds time out, the emergency timer
fires; a model says when a provisional decision may be taken."""

from __future__ import annotations

import hashlib

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from meshnode.domain.consensus import messages as m
from meshnode.domain.consensus.blocks import block_id, encode_block
from meshnode.domain.consensus.committee import Committee
from meshnode.domain.consensus.tendermint import Core, Emergency, NoQuorum, Revisit, Schedule, Timeouts
from meshnode.base.identity.keys import NodeKey

KEYS = [NodeKey(hashlib.sha256(b"emergency-%d" % i).digest()) for i in range(4)]
COMMITTEE = Committee.of({k.did: 1 for k in KEYS})
AFTER = 5000


def nil_prevote(i: int, height: int, round_: int, committee: Committee = COMMITTEE) -> m.Message:
    return m.decode(m.sign(KEYS[i], m.PREVOTE, committee.id, height, round_).encode())


def emergencies(actions) -> list:
    return [a for a in actions if isinstance(a, Emergency)]


def test_a_lone_validator_of_four_records_no_decision_only_that_it_has_no_quorum():
    core = Core(KEYS[0], COMMITTEE, timeouts=Timeouts(emergency_after_ms=AFTER))
    core.submit(b"alone", 0)
    core.receive(nil_prevote(1, 0, 0), 10)  # heard once, before it was cut off: what counts is who is there now
    out = core.timeout("emergency", 0, 0, AFTER, frozenset())
    assert emergencies(out) == [] and core.h.emergency is None
    assert [a for a in out if isinstance(a, NoQuorum)] == [NoQuorum(0, heard=1, total=4)] and core.h.no_quorum
    again = [a for a in out if isinstance(a, Schedule) and a.step == "emergency"]
    assert [a.at_ms for a in again] == [2 * AFTER]  # it looks again later, and says "no quorum" once
    out = core.timeout("emergency", 0, 0, 2 * AFTER, frozenset())
    assert emergencies(out) == [] and not [a for a in out if isinstance(a, NoQuorum)]
    # its driver knows no one (None): the validators heard at this height stand for its side (1 + 1 of 4)
    out = core.timeout("emergency", 0, 0, 3 * AFTER)
    assert emergencies(out) == [Emergency(0, encode_block([b"alone"]))] and not core.h.no_quorum


def test_a_side_with_half_the_weight_decides_provisionally_and_revisits():
    core = Core(KEYS[0], COMMITTEE, timeouts=Timeouts(emergency_after_ms=AFTER))
    core.submit(b"ours", 0)
    core.receive(nil_prevote(1, 0, core.h.round), 100)  # heard from the other validator of its side...
    out = core.timeout("emergency", 0, 0, AFTER, frozenset({KEYS[1].did}))  # ...which its driver reaches
    assert emergencies(out) == [Emergency(0, encode_block([b"ours"]))] and not core.h.no_quorum
    # the split heals and the committee decides another block: the provisional one is overturned
    agreed = {"value_id": block_id([b"agreed"]), "value": encode_block([b"agreed"])}
    precommits = tuple(m.sign(k, m.PRECOMMIT, COMMITTEE.id, 0, 2, value_id=agreed["value_id"]) for k in KEYS[1:4])
    commit = m.sign(KEYS[1], m.COMMIT, COMMITTEE.id, 0, 2, **agreed, commit=tuple(p.encode() for p in precommits))
    revisit = [a for a in core.receive(m.decode(commit.encode()), 9000) if isinstance(a, Revisit)]
    assert revisit == [Revisit(0, encode_block([b"ours"]), encode_block([b"agreed"]))] and not revisit[0].confirmed


class EmergencyMachine(RuleBasedStateMachine):
    """One core (validator 0) of a committee of random weights; the model: the validators heard at
    this height, and the side each emergency timer is told it reaches."""

    @initialize(weights=st.lists(st.integers(1, 5), min_size=4, max_size=4))
    def start(self, weights):
        self.committee = Committee.of({k.did: w for k, w in zip(KEYS, weights)})
        self.core = Core(KEYS[0], self.committee, timeouts=Timeouts(emergency_after_ms=AFTER))
        self.now = 0
        self.heard: set[int] = set()  # validators heard at this height (the model)
        self.provisional = self.said_no_quorum = 0
        self.core.submit(b"value", self.now)

    def _half(self, side: set[int]) -> bool:
        return 2 * sum(self.committee.weight(KEYS[i].did) for i in side | {0}) >= self.committee.total

    def _apply(self, actions) -> None:
        for a in actions:
            if isinstance(a, Emergency):
                self.provisional += 1
            elif isinstance(a, NoQuorum):
                self.said_no_quorum += 1
                assert (a.heard, a.total) != (0, 0) and 2 * a.heard < a.total

    @rule(who=st.integers(1, 3))
    def hear(self, who):
        self.now += 10
        self.heard.add(who)
        self._apply(self.core.receive(nil_prevote(who, 0, self.core.h.round, self.committee), self.now))

    @rule()
    def round_times_out(self):
        self.now += 1000
        for step in ("propose", "prevote", "precommit"):
            self._apply(self.core.timeout(step, 0, self.core.h.round, self.now))

    @rule(reach=st.none() | st.sets(st.integers(1, 3)))
    def emergency_timer(self, reach):
        self.now = max(self.now + 10, AFTER)
        before = self.core.h.emergency
        reachable = None if reach is None else frozenset(KEYS[i].did for i in reach)
        half = self._half(self.heard if reach is None else set(reach))  # None: those heard stand for the side
        self._apply(self.core.timeout("emergency", 0, 0, self.now, reachable))
        if before is None:  # a minority records nothing and says so; a side of half or more decides
            assert (self.core.h.emergency is not None) == half
            assert self.core.h.no_quorum == (not half)
        else:  # once taken, the provisional decision stays as it was
            assert self.core.h.emergency == before

    @invariant()
    def at_most_one_provisional_decision_and_one_no_quorum_notice(self):
        if hasattr(self, "core"):
            assert self.provisional <= 1 and self.said_no_quorum <= 1
            assert self.core.height == 0  # nothing is decided for real without a quorum


TestEmergencyMachine = EmergencyMachine.TestCase
TestEmergencyMachine.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)
