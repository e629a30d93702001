"""sims/ with a committee smaller than the mesh: K validators chosen by trust, the other nodes
clients and relays that take decisions only from signed commits their core checks against the
committee. Safety (validators and clients alike) while the Byzantine weight is below a third of
the committee's, every client reaching every decision, forged commits refused, and sends per
node that do not grow with the mesh."""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from meshnode.domain.consensus import messages as m
from meshnode.domain.consensus.blocks import encode_block
from meshnode.domain.consensus.tendermint import Core, Decide
from sims.consensus import BEHAVIOURS, KEPT_HEIGHTS, ConsensusSim, Options


@st.composite
def committee_runs(draw):
    nodes = draw(st.integers(8, 30))
    committee = draw(st.integers(4, min(nodes - 2, 10)))
    partition = None
    if draw(st.booleans()):
        start = draw(st.integers(0, 3000))
        partition = (start, start + draw(st.integers(100, 6000)))
    return Options(nodes=nodes, committee=committee, byzantine=draw(st.integers(0, (committee - 1) // 3)) / committee,
                   behaviour=draw(st.sampled_from(BEHAVIOURS)), sybils=draw(st.integers(0, 2)),
                   heights=draw(st.integers(3, 8)), seed=draw(st.integers(0, 2**32)), latency_ms=draw(st.sampled_from([5.0, 50.0, 200.0])),
                   jitter=draw(st.sampled_from([0.1, 0.5, 1.5])), loss=draw(st.sampled_from([0.0, 0.05, 0.3])),
                   duplication=draw(st.sampled_from([0.0, 0.2])), partition=partition, max_time_ms=60_000,
                   submit_every_ms=draw(st.sampled_from([0, 20, 100])))  # 0, 20: several values a block


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(committee_runs())
def test_validators_and_clients_never_commit_different_values(options):
    sim = ConsensusSim(options)
    assume(sim.byzantine_weight < 1 / 3)  # weights follow trust: a third by count may weigh more
    assert len(sim.validators) == options.committee and len(sim.clients) == options.nodes - options.committee
    result = sim.run()
    assert result.safe, result.violation


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(12, 40), st.integers(4, 10), st.sampled_from(BEHAVIOURS), st.integers(0, 2**32))
def test_every_client_takes_every_decision_from_a_verified_commit(nodes, committee, behaviour, seed):
    options = Options(nodes=nodes, committee=committee, byzantine=((committee - 1) // 3) / committee,
                      behaviour=behaviour, heights=4, seed=seed, max_time_ms=60_000)
    sim = ConsensusSim(options)
    assume(sim.byzantine_weight < 1 / 3)
    result = sim.run()
    assert result.safe and result.decided_values == 4, (result.decided_values, result.violation)
    assert result.client_decisions == result.clients * result.decided_heights
    decided = {h: v for h, (_, v, _) in sim.first_decision.items()}
    for c in sim.clients:  # each client holds the committee's block for each height, with its precommits
        for h in range(result.decided_heights):
            d = sim.cores[c].decided[h]
            assert d.from_commit and d.block == decided[h]
            assert sim.committee.quorum(sum(sim.committee.weight(p.sender) for p in d.precommits))


def _decided_mesh(**extra) -> ConsensusSim:
    sim = ConsensusSim(Options(nodes=16, committee=7, byzantine=2 / 7, heights=2, seed=3, **extra))
    assert sim.byzantine_weight < 1 / 3
    assert sim.run().safe
    return sim


def _fresh_client(sim: ConsensusSim) -> Core:
    return Core(sim.keys[sim.clients[0]], sim.committee, timeouts=sim.o.timeouts)


def _decides(core: Core, msg: m.Message) -> bool:
    return any(isinstance(a, Decide) for a in core.receive(msg, 0))


def test_a_client_refuses_a_commit_without_a_quorum_of_valid_precommits():
    sim = _decided_mesh()
    genuine = sim.cores[sim.honest[0]].commit_message(0)
    assert genuine is not None and _decides(_fresh_client(sim), genuine)
    # every Byzantine validator's precommit for a value of their own: less than a third, refused
    assert not _decides(_fresh_client(sim), sim._forged_commit(sorted(sim.byzantine)[0], 0))
    # the genuine commit with one precommit's signature altered: the altered copy is refused,
    # although the original bytes were verified (and cached) a moment ago
    raw = bytearray(genuine.commit[0])
    raw[-1] ^= 1
    tampered = m.sign(sim.keys[sim.honest[0]], m.COMMIT, genuine.committee, 0, genuine.round,
                      value_id=genuine.value_id, value=genuine.value, commit=(bytes(raw),) + genuine.commit[1:])
    assert not _decides(_fresh_client(sim), tampered)
    # the same precommits under another value: refused
    other = encode_block([b"not what was decided"])
    moved = m.sign(sim.keys[sim.honest[0]], m.COMMIT, genuine.committee, 0, genuine.round,
                   value_id=m.block_id_of(other), value=other, commit=genuine.commit)
    assert not _decides(_fresh_client(sim), moved)


def test_spamming_validators_send_forged_commits_and_clients_refuse_them():
    sim = ConsensusSim(Options(nodes=30, committee=7, byzantine=2 / 7, behaviour="spam", heights=3, seed=5))
    assert sim.byzantine_weight < 1 / 3
    result = sim.run()
    assert result.safe and result.decided_values == 3
    assert result.commits_refused > 0 and result.rejected > 0
    assert result.client_decisions == result.clients * result.decided_heights


def test_sends_per_node_do_not_grow_with_the_mesh():
    """The committee's traffic is fixed by K and stays in the committee; a client or relay gets
    only a few messages per decision (requests, commits, pull answers), never the votes, so
    sends per decision per node stay flat as N grows."""
    def run(nodes: int) -> tuple[float, float]:
        sim = ConsensusSim(Options(nodes=nodes, committee=10, heights=3, seed=2))
        to_clients = 0
        send = sim.net.send

        def counting(sender, receiver, payload):
            nonlocal to_clients
            to_clients += receiver in clients
            return send(sender, receiver, payload)

        clients = set(sim.clients)
        sim.net.send = counting
        r = sim.run()
        h = r.decided_heights
        assert r.safe and r.decided_values == 3 and r.client_decisions == r.clients * h
        return r.sent / h / nodes, to_clients / h / len(clients)

    (small, small_client), (large, large_client) = run(50), run(400)
    assert large < small * 1.2, (small, large)
    assert max(small_client, large_client) < 8, (small_client, large_client)  # K = 10 validators vote 20+ times


def test_the_transport_forgets_heights_every_honest_validator_is_past():
    sim = ConsensusSim(Options(nodes=40, committee=10, byzantine=0.2, heights=8, seed=4))
    assert sim.run().decided_values == 8
    assert max(len(sim._holders), len(sim._relayed)) <= KEPT_HEIGHTS + 3


def test_without_a_committee_option_every_node_validates_with_equal_weight():
    sim = ConsensusSim(Options(nodes=9, byzantine=2 / 9))
    assert sim.validators == list(range(9)) and not sim.clients
    assert {w for _, w in sim.committee.members} == {1000}
    assert dataclasses.replace(sim.o, committee=9).committee == 9
    assert ConsensusSim(Options(nodes=9, committee=9)).committee == sim.committee
