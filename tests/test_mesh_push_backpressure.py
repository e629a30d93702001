"""Back-pressure on strangers' pushes (issue 36), in-process with fake streams (tests/test_mesh_cost.py's):
a push is decoded only as far as the strangers' write rate has room, the rest rejected ``busy`` unread
with a hint; a stranger that pushes again before its hint is refused and, past one, cut off; the
bytes of a frame are charged as read; this node's own pushes keep the hints they are given."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from meshnode.base.container import build_container, now_ms
from meshnode.base.identity.keys import NodeKey
from meshnode.net import exchange
from meshnode.net.author_rate import RateSettings
from meshnode.net.budget import BudgetLimits, read_ms
from meshnode.net.frames import encode_frame
from meshnode.net.retry_hints import RetryHints, RetryLimits
from test_mesh_cost import FakeStream, Message, mesh_for, peer, push_frame

T0 = now_ms()


def junk(n: int) -> list[bytes]:
    """``n`` valid containers, each from a fresh key (a Sybil's)."""
    return [build_container(NodeKey.generate(), "x_junk", {"text": "j" * 2000}, timestamp_ms=now_ms()).to_bytes()
            for _ in range(n)]


def test_a_hint_tolerates_one_early_push_and_counts_the_rest_until_it_elapses():
    hints = RetryHints(RetryLimits(tolerated=1))
    assert hints.early("a", T0) is None  # never told
    hints.told("a", 1000, T0)
    assert hints.early("a", T0 + 10) == (990, False)  # one may already have been under way
    assert hints.early("a", T0 + 20) == (980, True)
    assert hints.early("a", T0 + 30) == (970, True)
    assert hints.early("b", T0 + 30) is None  # per identity
    assert hints.early("a", T0 + 1000) is None and len(hints) == 0  # elapsed: forgotten
    hints.told("a", 500, T0 + 2000)
    assert hints.early("a", T0 + 2001) == (499, False)  # a new hint: counted afresh


async def ticking_mesh(tmp_path, now: list[int], burst: int):
    """A Mesh whose clock is ``now[0]``, strangers' containers stored at 1/s past a burst of ``burst``."""
    return await mesh_for(tmp_path, clock=lambda: now[0],
                          author_rate=RateSettings(stranger_writes_per_second=1.0, stranger_writes_burst=burst))


def _counting_decodes(mesh) -> list[int]:
    decoded = []
    original = mesh.exchange._decode

    def decode(raw):
        decoded.append(len(raw))
        return original(raw)

    mesh.exchange._decode = decode
    return decoded


def test_a_strangers_push_is_decoded_only_as_far_as_the_write_rate_has_room(tmp_path):
    async def main():
        now = [now_ms()]  # the clock of the node: containers are built at the real now (T0 was taken at import)
        mesh, store = await ticking_mesh(tmp_path, now, burst=3)
        async with store:
            decoded = _counting_decodes(mesh)
            sender = NodeKey.generate()
            stream = FakeStream(push_frame(junk(16)), peer(sender))
            await mesh.exchange.serve(stream)
            ack = stream.answer()
            assert ack["op"] == "ack" and len(ack["accepted"]) == 3, ack
            assert [r["code"] for r in ack["rejected"]] == ["busy"] * 13 and 0 < ack["retry_ms"] <= 1001
            assert len(decoded) == 3  # the 13 the rate has no room for were not decoded
            assert mesh.metrics.get("containers_refused", reason="stranger_rate", via="push_unread") == 13

            now[0] += 2000  # the hint elapsed, two tokens refilled
            again = FakeStream(push_frame(junk(16)), peer(sender))
            await mesh.exchange.serve(again)
            assert len(again.answer()["accepted"]) == 2 and len(decoded) == 5

            now[0] += 2000
            mesh.known.replace([sender.did])  # a known peer: vouches for what it sends, never limited
            known = FakeStream(push_frame(junk(16)), peer(sender))
            await mesh.exchange.serve(known)
            assert len(known.answer()["accepted"]) == 16 and "retry_ms" not in known.answer()

    trio.run(main)


def test_a_stranger_that_pushes_before_its_hint_is_refused_unread_and_cut_off(tmp_path):
    async def main():
        now = [now_ms()]  # the clock of the node: containers are built at the real now (T0 was taken at import)
        mesh, store = await ticking_mesh(tmp_path, now, burst=1)
        async with store:
            decoded = _counting_decodes(mesh)
            sender, items = NodeKey.generate(), junk(4)
            first = FakeStream(push_frame(items), peer(sender))
            await mesh.exchange.serve(first)
            assert len(first.answer()["accepted"]) == 1 and first.answer()["retry_ms"] > 0
            answers, held = [], []
            for _ in range(5):  # at once again, as a flood does
                now[0] += 1
                stream = FakeStream(push_frame(items), peer(sender))
                started = trio.current_time()
                await mesh.exchange.serve(stream)
                held.append(round(trio.current_time() - started, 2))
                answers.append(stream.answer())
            assert [a["code"] for a in answers] == ["busy"] * 5 and all(a["retry_ms"] > 0 for a in answers)
            # the one tolerated is answered once its hint has elapsed (a peer pushing one request after
            # another waits as told), the rest at once
            assert 0.9 < held[0] <= 1.001 and held[1:] == [0.0] * 4
            assert len(decoded) == 1  # none of them decoded
            assert mesh.metrics.get("exchange_refused", reason="early_push") == 5
            assert mesh.metrics.get("invalid_from_peer", code="early_push") == 4  # the first one tolerated
            assert mesh.standing.is_banned(sender.did, now[0])  # 4 x 5 = the threshold of 20

            other = NodeKey.generate()  # a stranger that waits for its hint is never counted
            now[0] += 5000
            late = FakeStream(push_frame(items[:2]), peer(other))
            await mesh.exchange.serve(late)
            now[0] += late.answer()["retry_ms"]
            later = FakeStream(push_frame(items[2:]), peer(other))
            await mesh.exchange.serve(later)
            assert later.answer()["op"] == "ack"
            assert mesh.standing.summary(other.did)["invalid"] == 0

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_fetch_is_not_held_to_a_push_hint(tmp_path):
    async def main():
        now = [now_ms()]  # the clock of the node: containers are built at the real now (T0 was taken at import)
        mesh, store = await ticking_mesh(tmp_path, now, burst=1)
        async with store:
            sender = NodeKey.generate()
            await mesh.exchange.serve(FakeStream(push_frame(junk(3)), peer(sender)))
            fetch = FakeStream(encode_frame(exchange.encode_message({"op": "fetch", "dids": ["did:key:zmissing"]})),
                               peer(sender))
            await mesh.exchange.serve(fetch)
            assert fetch.answer()["op"] == "found"

    trio.run(main)


def test_the_bytes_of_a_frame_are_charged_as_read(tmp_path):
    async def main():
        frozen = now_ms()
        mesh, store = await mesh_for(tmp_path, clock=lambda: frozen)
        async with store:
            frame = encode_frame(exchange.encode_message({"op": "nothing", "pad": b"x" * (512 * 1024)}))
            await mesh.exchange.serve(FakeStream(frame, peer(NodeKey.generate())))
            # the parse of one byte string costs well under a ms; reading 512 KiB is charged on top
            assert mesh.budgets.strangers_spent(frozen) >= read_ms(len(frame))

    trio.run(main)


def test_a_request_of_few_items_is_parsed_on_the_loop_whatever_its_bytes(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path)
        async with store:
            frame = encode_frame(exchange.encode_message({"op": "nothing", "pad": b"x" * (200 * 1024)}))
            stream = FakeStream(frame, peer(NodeKey.generate()))
            await mesh.exchange.serve(stream)
            assert stream.answer()["code"] == "bad_request"
            assert mesh.metrics.get("offload_jobs") == 0  # no thread hop: it costs more than this parse

    trio.run(main)


def test_this_nodes_pushes_keep_the_hint_they_were_given(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path)
        async with store:
            sent = []

            async def request(did, message, expected, timeout=10.0):
                sent.append(did)
                return exchange.ack([], [], [], retry_ms=5000)

            mesh.exchange.request = request
            did = NodeKey.generate().did
            mesh.exchange._keep_hint(did, exchange.ack([], [], [{"index": 0, "code": "busy", "reason": ""}], 5000))
            with pytest.raises(exchange.ExchangeError) as refused:
                await mesh.exchange.push(did, [])
            assert refused.value.code == "busy" and sent == []  # refused here: nothing sent
            assert mesh.metrics.get("push_deferred") == 1
            await mesh.exchange.push(NodeKey.generate().did, [])  # another peer: sent
            assert len(sent) == 1

    trio.run(main)


def test_strangers_gossip_is_not_decoded_when_the_write_rate_has_no_room(tmp_path):
    async def main():
        now = [now_ms()]  # the clock of the node: containers are built at the real now (T0 was taken at import)
        mesh, store = await ticking_mesh(tmp_path, now, burst=1)
        async with store:
            decoded = []
            decode = mesh.container_gossip._decode
            mesh.container_gossip._decode = lambda raw: decoded.append(raw) or decode(raw)
            friend = NodeKey.generate()
            mesh.known.replace([friend.did])

            def gossip(author: NodeKey, n: int) -> Message:
                c = build_container(author, "x_test", {"n": n}, timestamp_ms=now_ms())
                return Message(c.to_bytes(), peer(author).to_bytes(), seqno=bytes([n]) * 8)

            sybil = NodeKey.generate()
            assert await mesh.container_gossip.validate_container(peer(sybil), gossip(sybil, 1))  # the token
            assert not await mesh.container_gossip.validate_container(peer(sybil), gossip(sybil, 2))
            assert len(decoded) == 1  # no room: the second was ignored before it was decoded
            assert mesh.metrics.get("gossip_ignored", reason="stranger_rate") == 1
            # a known publisher's or forwarder's gossip is decoded and relayed whatever the rate
            assert await mesh.container_gossip.validate_container(peer(sybil), gossip(friend, 3))
            assert await mesh.container_gossip.validate_container(peer(friend), gossip(sybil, 4))
            assert len(decoded) == 3

    trio.run(main)


def test_a_frame_its_sender_cannot_pay_to_receive_is_refused_unread(tmp_path):
    async def main():
        frozen = now_ms()
        mesh, store = await mesh_for(tmp_path, clock=lambda: frozen,
                                     budget_limits=BudgetLimits(strangers_ms_per_second=1.0, strangers_burst_ms=100.0))
        async with store:
            mesh.budgets.charge("did:key:zother", "198.51.100.7", False, 95.0, frozen)  # other strangers spent it
            frame = encode_frame(exchange.encode_message({"op": "nothing", "pad": b"x" * (512 * 1024)}))
            stream = FakeStream(frame, peer(NodeKey.generate()))
            await mesh.exchange.serve(stream)  # 5 ms left in the strangers' budget, 10 ms of reading
            assert stream.answer()["code"] == "over_budget" and stream.was_reset
            assert len(stream.data) > 500 * 1024  # its body left unread
            assert mesh.metrics.get("exchange_refused", reason="unread") == 1
            assert mesh.metrics.get("budget_refused", key="strangers") == 1

    trio.run(main)


def test_an_unchanged_standing_is_not_stored_again_after_each_request(tmp_path):
    async def main():
        from meshnode.net.peer_guard import STANDING_REFRESH_MS, save_standing_row

        now = [now_ms()]  # the clock of the node: containers are built at the real now (T0 was taken at import)
        mesh, store = await ticking_mesh(tmp_path, now, burst=1)
        async with store:
            writes = []
            write = store.write

            async def counted(fn, *args, **kwargs):
                writes.append(fn)
                return await write(fn, *args, **kwargs)

            store.write = counted
            sender = NodeKey.generate()
            fetch = encode_frame(exchange.encode_message({"op": "fetch", "dids": ["did:key:zmissing"]}))
            for _ in range(3):
                await mesh.exchange.serve(FakeStream(fetch, peer(sender)))
            assert writes.count(save_standing_row) == 1  # the two after it changed nothing
            await mesh.exchange.serve(FakeStream(encode_frame(b"\xa0"), peer(sender)))  # invalid: changed
            assert writes.count(save_standing_row) == 2
            now[0] += STANDING_REFRESH_MS
            await mesh.exchange.serve(FakeStream(fetch, peer(sender)))  # unchanged, but a minute later
            assert writes.count(save_standing_row) == 3

    trio.run(main)
