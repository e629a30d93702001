"""The consensus driver (net/mesh_consensus.py) in process, with the store and the mesh left out:
what it does when the core fails, and with the decisions it has not stored yet."""

from __future__ import annotations

import hashlib

import trio
import trio.testing

from meshnode.domain.consensus import blocks, epochs
from meshnode.domain.consensus.committee import Committee
from meshnode.domain.consensus.messages import (COMMIT, PRECOMMIT, PREVOTE, PROPOSAL, REQUEST, MessageError, block_id_of,
                                        sign, value_id)
from meshnode.domain.consensus.tendermint import PROPOSE, Broadcast, Decide, Schedule
from meshnode.base.container import cbor
from meshnode.base.identity.keys import NodeKey
from meshnode.base.metrics import Metrics
from meshnode.net import consensus_gossip
from meshnode.net.libp2p_parts import Libp2pParts
from meshnode.net.mesh_consensus import CONSENSUS_TOPIC, WRITE_QUEUE, Consensus


class _Failing:
    def timeout(self, step, height, round_, now):
        raise ValueError("a bug in the core")


class _Guard:
    """The peer guard, as far as the driver charges authors: who was charged for what."""

    def __init__(self, charged: list):
        self.charged = charged

    def invalid_from_peer_id(self, peer_id, code: str) -> None:
        self.charged.append((peer_id, code))


class _Driver(Consensus):
    def __init__(self) -> None:
        super().__init__(Libp2pParts(), None, None, None, Metrics(), lambda: 0)


async def test_a_core_timer_that_raises_is_counted_and_the_timers_go_on():
    d = _Driver()
    d.core = _Failing()
    d._timers = [(0, 1, d.core, Schedule(PROPOSE, 0, 0, 0)), (0, 2, d.core, Schedule(PROPOSE, 0, 0, 0))]
    d._timers_changed = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(d._consensus_timers)
        await trio.testing.wait_all_tasks_blocked()
        assert d.metrics.get("consensus_core_errors", step="timeout") == 2
        assert not d._timers
        nursery.cancel_scope.cancel()


async def test_decisions_queued_for_the_store_are_stored_when_the_node_shuts_down():
    """Acknowledged decisions still queued when the node stops are stored (else a restarted
    committee decides those heights again); the queue is bounded (the reader waits)."""
    d = _Driver()
    d._to_store, stored = trio.open_memory_channel(WRITE_QUEUE)
    done = []

    async def job(i):
        await trio.sleep(0)  # (a store trip: a checkpoint where cancellation strikes)
        done.append(i)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(d._consensus_writer, stored)
        for i in range(WRITE_QUEUE):
            await d._write(job, i)
        nursery.cancel_scope.cancel()
    assert done == list(range(WRITE_QUEUE))
    assert d._to_store.statistics().max_buffer_size == WRITE_QUEUE


class _Core:
    def __init__(self, decided):
        self.decided_ids, self.height = decided, 7


class _Store:
    def __init__(self):
        self.rows = {}

    async def read(self, fn, value):
        return self.rows.get(value)


async def test_a_decision_is_answered_committed_only_once_it_is_stored():
    d = _Driver()
    d.store, d._decision_waiters = _Store(), {}
    d.core = _Core({value_id(b"v")})
    d._unsaved = {value_id(b"v"): (3, 0)}  # decided, queued for the writer
    answers = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: _answer(d, answers))
        await trio.testing.wait_all_tasks_blocked()
        assert not answers  # not before the write
        d.store.rows[b"v"] = (3, 0)
        d._unsaved.clear()
        d._decision_waiters.pop(value_id(b"v")).set()
    assert answers[0]["status"] == "committed" and answers[0]["height"] == 3


async def _answer(d, answers):
    answers.append(await d.consensus_submit(b"v"))


async def test_at_an_epoch_switch_the_old_core_s_next_height_messages_are_not_published():
    """The decision naming the next committee is carried out first: the old core's own
    precommit for that height still goes out, its proposal and prevote for the next height
    (under the old committee id, which nobody counts any more) do not."""
    key = NodeKey(hashlib.sha256(b"driver").digest())
    committee = Committee.of({key.did: 1})
    old, new = _Core(set()), _Core(set())
    old.committee = committee
    d = _Driver()
    d.core, d._unsaved, d.clock, published = old, {}, lambda: 0, []

    async def nothing(*args):
        pass

    async def switch(decision):
        d.core = new

    async def publish(msgs):
        published.extend((msg.kind, msg.height) for msg in msgs)

    d._write, d._written, d._maybe_new_epoch, d._consensus_publish = nothing, nothing, switch, publish
    block = blocks.encode_block([epochs.committee_value(1, ["did:key:z6Mkstatement"])])
    vote = lambda kind, h: Broadcast(sign(key, kind, committee.id, h, 0, value_id=block_id_of(block)))  # noqa: E731
    await d._consensus_apply([vote(PRECOMMIT, 4), Decide(4, block, 0, ()), vote(PREVOTE, 5)])
    assert published == [(PRECOMMIT, 4)] and d.core is new


def test_the_reader_takes_proposals_votes_and_requests_only_from_validators_of_known_committees():
    members = [NodeKey(hashlib.sha256(b"member-%d" % i).digest()) for i in range(2)]
    outsider = NodeKey(hashlib.sha256(b"outsider").digest())
    d = _Driver()
    d.key, d._previous = members[0], None
    d.core = _Core(set())
    d.core.committee = Committee.of({k.did: 1 for k in members})
    msg = lambda key, kind, committee=d.core.committee.id: sign(key, kind, committee, 0, 0)  # noqa: E731
    assert d._sender_ok(msg(members[1], PREVOTE))
    assert not d._sender_ok(msg(outsider, PREVOTE))
    assert d._sender_ok(msg(outsider, "catchup"))
    assert d._sender_ok(msg(outsider, PREVOTE, "e9-another"))  # (tells an epoch was missed)


class _Pubsub:
    def __init__(self):
        self.sent = []

    async def publish(self, topic, data):
        self.sent.append((topic, data))


async def test_the_messages_of_one_step_go_out_as_one_gossip_message_and_a_big_one_alone():
    """A node asked for a value it proposes says a request, its proposal and its prevote in one
    step: one gossip message (each costs every node a receive, a relay and duplicates), in order,
    counted per kind; a message too big to share one (a commit of a large block) goes alone."""
    key = NodeKey(hashlib.sha256(b"bundler").digest())
    d = _Driver()
    d.core, d.parts.pubsub, d._resends = _Core(set()), _Pubsub(), 0
    d._timers, d._timer_seq, d._timers_changed = [], 0, trio.Event()
    d.core.committee = Committee.of({key.did: 1})
    small = blocks.encode_block([b"asked"])
    big = blocks.encode_block([bytes([i]) * 16_000 for i in range(5)])
    say = lambda kind, block=None, h=0: Broadcast(sign(key, kind, "c", h, 0, value_id=block and block_id_of(block),  # noqa: E731
                                                       value=block))
    step = [say(REQUEST, small), say(PROPOSAL, small), say(PREVOTE), Schedule(PROPOSE, 0, 0, 10)]
    await d._consensus_apply(step)
    assert [t for t, _ in d.parts.pubsub.sent] == [CONSENSUS_TOPIC]
    assert consensus_gossip.unwrap(d.parts.pubsub.sent[0][1]) == [a.message.encode() for a in step[:3]]
    assert d.metrics.get("consensus_sent", kind=PROPOSAL) == 1 and d.metrics.get("consensus_gossip_published") == 1
    d.parts.pubsub.sent.clear()
    await d._consensus_apply([say(PRECOMMIT), say(COMMIT, big), say(PREVOTE, h=1)])
    assert [len(consensus_gossip.unwrap(data)) for _, data in d.parts.pubsub.sent] == [1, 1, 1]


def test_a_gossip_envelope_of_another_shape_is_refused():
    vote = sign(NodeKey(hashlib.sha256(b"e").digest()), PREVOTE, "c", 0, 0).encode()
    assert consensus_gossip.unwrap(consensus_gossip.wrap([vote, vote], 1)) == [vote, vote]
    for bad in ([vote, 1], [[], 1], [[vote] * (consensus_gossip.MAX_BUNDLE + 1), 1], [[vote, 3], 1], [[vote]],
                [[vote], -1]):
        try:
            consensus_gossip.unwrap(cbor.encode(bad))
        except MessageError as exc:
            assert exc.code == "bad_message"
        else:
            raise AssertionError(f"{bad!r} was taken")


async def test_a_refused_message_charges_the_envelope_s_author_once_and_a_copy_is_taken_once():
    """An envelope is one gossip message, signed by the node that wrapped it: a forged or malformed
    message inside charges that node (once per fault, whatever the count), a copy of a message in
    the same envelope is taken once, and a vote of a non-member (a node on an older committee) is
    refused without a charge."""
    from libp2p.peer.id import ID
    from libp2p.pubsub.pb import rpc_pb2

    from meshnode.base.identity.did import did_to_peer_id

    member, wrapper = (NodeKey(hashlib.sha256(b"m%d" % i).digest()) for i in range(2))
    d = _Driver()
    d.key, d._previous, d.core = NodeKey(hashlib.sha256(b"self").digest()), None, _Core(set())
    d.core.committee = Committee.of({member.did: 1})
    good = sign(member, PREVOTE, d.core.committee.id, 0, 0)
    forged = good.encode().replace(good.signature, bytes(64))
    outsider = sign(wrapper, PREVOTE, d.core.committee.id, 0, 0).encode()
    taken, charged = [], []
    real_take = d._consensus_take

    async def take(data):
        taken.append(data)
        return await real_take(data) if data != good.encode() else None  # (the good one: no core here)

    d._consensus_take = take
    d.guard = _Guard(charged)
    author = ID.from_base58(did_to_peer_id(wrapper.did))
    send, receive = trio.open_memory_channel(4)
    envelope = consensus_gossip.wrap([good.encode(), good.encode(), forged, forged, outsider], 7)
    await send.send(rpc_pb2.Message(data=envelope, from_id=author.to_bytes()))
    await send.send(rpc_pb2.Message(data=cbor.encode([[good.encode()], -1]), from_id=author.to_bytes()))
    subscription = type("Sub", (), {"get": staticmethod(receive.receive)})
    async with trio.open_nursery() as nursery:
        nursery.start_soon(d._consensus_reader, subscription)
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert taken == [good.encode(), forged, outsider]
    assert charged == [(author, "bad_signature"), (author, "bad_message")]
    assert d.metrics.get("consensus_rejected", code="not_member") == 1


def test_the_topic_validator_refuses_a_malformed_envelope_before_it_is_relayed_and_charges_its_author():
    """Before it, a malformed envelope passed pubsub (no validator on the topic): relayed to the whole
    committee, and refused only at each reader."""
    from libp2p.peer.id import ID
    from libp2p.pubsub.pb import rpc_pb2

    from meshnode.base.identity.did import did_to_peer_id

    wrapper = NodeKey(hashlib.sha256(b"w").digest())
    d, charged = _Driver(), []
    d.guard = _Guard(charged)
    author = ID.from_base58(did_to_peer_id(wrapper.did))
    vote = sign(wrapper, PREVOTE, "c", 0, 0).encode()
    ok = rpc_pb2.Message(data=consensus_gossip.wrap([vote], 3), from_id=author.to_bytes())
    assert d.validate_gossip(author, ok) is True and charged == []
    for bad in (cbor.encode([[vote], -1]), cbor.encode([vote, 1]), b"\xff not cbor"):
        assert d.validate_gossip(author, rpc_pb2.Message(data=bad, from_id=author.to_bytes())) is False
    assert charged == [(author, "bad_message")] * 3
    assert d.metrics.get("consensus_rejected", code="bad_message") == 3


class _Holds:
    """The store, as far as the driver asks whether a GMP delegation value's containers are held."""

    def __init__(self, holds: bool):
        self.holds, self.asked = holds, 0

    async def read(self, fn, *args):
        self.asked += 1
        return self.holds


async def test_a_gmp_delegation_value_is_valid_once_its_nomination_is_held_or_a_quorum_committed_it():
    """gmp.md 6.3 step 3: a validator prevotes nil on a delegation value until it holds the nomination
    and the version (looked at again with each message carrying it); a proven commit is taken anyway."""
    from meshnode.domain.gmp.contest import delegation_value

    d = _Driver()
    d._valid_values = {}
    value = delegation_value("did:t", "did:v", "did:n")
    d.store = _Holds(False)
    await d._check_value(value)
    await d._check_value(value)
    assert not d._value_is_valid(value) and d.store.asked == 2  # not held: asked again next time
    assert d.metrics.get("consensus_gmp_value_not_held") == 2
    await d._check_value(value, committed=True)
    assert d._value_is_valid(value)
    other = delegation_value("did:t", "did:v", "did:m")
    d.store = _Holds(True)
    await d._check_value(other)
    assert d._value_is_valid(other)
    bad = b'{"kind":"gmp_delegation","task":"did:t"}'
    await d._check_value(bad, committed=True)
    assert not d._value_is_valid(bad)
