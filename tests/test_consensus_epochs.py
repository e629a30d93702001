"""Committee epochs: the next committee derived from published trust, the same on every node."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshnode.domain.consensus import epochs
from meshnode.domain.consensus.committee import Committee
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.reputation.statements import build_trust

KEYS = [NodeKey(hashlib.sha256(b"epoch-%d" % i).digest()) for i in range(8)]
MEMBERS = KEYS[:4]
GENESIS = Committee.of({k.did: 1 for k in MEMBERS})
T0 = 1_800_000_000_000


def statement(signer: int, subject: int, score: float, t: int = 0):
    return build_trust(KEYS[signer], KEYS[subject].did, score, now_ms=T0 + t)


def test_the_committee_value_round_trips_and_other_values_are_not_committee_values():
    value = epochs.committee_value(1, ["did:hmp:container:b", "did:hmp:container:a"])
    assert epochs.parse_committee_value(value) == (1, ["did:hmp:container:a", "did:hmp:container:b"])
    assert epochs.parse_committee_value(b"just a decision") is None
    with pytest.raises(epochs.EpochError):
        epochs.committee_value(1, [])


def test_weights_follow_members_trust_and_leave_out_the_untrusted():
    said = [statement(s, j, 0.9) for s in range(4) for j in range(4) if s != j]  # members vouch for each other
    said += [statement(0, 3, 0.04, t=5)]  # member 0 later cut 3 (an equivocator): its newest statement counts
    said += [statement(5, 6, 1.0), statement(6, 5, 1.0)]  # outsiders praising each other count for nothing
    said += [statement(1, 4, 0.8), statement(2, 4, 0.8)]  # a newcomer two members trust
    nxt = epochs.derive(GENESIS, said, 1)
    weights = nxt.weights
    assert KEYS[5].did not in weights and KEYS[6].did not in weights
    assert KEYS[4].did in weights and weights[KEYS[0].did] == 900
    assert weights[KEYS[3].did] == round(1000 * (0.04 + 0.9 + 0.9) / 3)  # mean over its three signers
    assert epochs.epoch_of(nxt) == 1 and nxt.id.startswith("e1-")
    with pytest.raises(epochs.EpochError, match="next epoch is 1"):
        epochs.derive(GENESIS, said, 2)


def test_no_trusted_candidates_is_no_committee():
    with pytest.raises(epochs.EpochError, match="no one"):
        epochs.derive(GENESIS, [statement(0, 1, 0.3), statement(1, 0, 0.2)], 1)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7), st.floats(0, 1), st.integers(0, 50)), min_size=1,
                max_size=30), st.randoms())
def test_every_node_derives_the_same_committee_whatever_the_order(specs, rnd):
    said = [statement(a, b, x, t) for a, b, x, t in specs if a != b]
    if not said:
        return
    shuffled = list(said)
    rnd.shuffle(shuffled)
    try:
        first = epochs.derive(GENESIS, said, 1)
    except epochs.EpochError:
        with pytest.raises(epochs.EpochError):
            epochs.derive(GENESIS, shuffled, 1)
        return
    assert epochs.derive(GENESIS, shuffled, 1) == first
    assert all(w > 0 for _, w in first.members)
