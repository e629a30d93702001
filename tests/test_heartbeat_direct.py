"""Heartbeats travel one hop, with real processes: a line A - B - C where A and C are never
connected (each has the other cut off in its store, so neither dials nor keeps a connection to the
other). B hears both; A never hears C (nothing relays heartbeats); a node sends one heartbeat per
connected peer per interval, not one per node of the mesh times its degree. A plain libp2p peer
is not sent heartbeats: counted once, not retried."""

from __future__ import annotations

from meshharness import Node, metric, plain_peer, wait_until
from meshnode.base.container import now_ms
from meshnode.base.identity.did import did_to_peer_id
from meshnode.store import Database
from meshnode.store.peers import save_standing, upsert_peer


def liveness_of(observer: Node, did: str) -> str | None:
    rows = observer.try_call("peers") or []
    return next((r["liveness"] for r in rows if r["did"] == did), None)


def cut_off(node: Node, other: Node) -> None:
    """``node`` starts with ``other`` banned for a day: it refuses to dial it and closes its connections."""
    db = Database(node.home / "data" / "meshnode.db", create=False)
    try:
        t = now_ms()
        upsert_peer(db, other.did, peer_id=did_to_peer_id(other.did), now_ms=t, source="exchange")
        save_standing(db, other.did, {"valid": 0, "invalid": 0, "invalid_by_code": {}, "rate_limited": 0,
                                      "banned_until_ms": t + 86_400_000}, t)
    finally:
        db.close()


def counts(node: Node) -> tuple[int, int]:
    return metric(node, "heartbeats_sent"), metric(node, "heartbeats_received")


def test_heartbeats_go_one_hop_and_one_per_connected_peer(tmp_path):
    a, b, c = (Node(tmp_path, name) for name in "abc")
    cut_off(a, c)
    cut_off(c, a)
    try:
        b.start()
        for end in (a, c):
            end.set_bootstrap(b)
            end.start()
        wait_until(lambda: liveness_of(b, a.did) == "ok" and liveness_of(b, c.did) == "ok", 60, "b to hear a and c")
        wait_until(lambda: liveness_of(a, b.did) == "ok" and liveness_of(c, b.did) == "ok", 60, "a and c to hear b")

        # a window of ten heartbeat intervals, as b's own count measures it (two peers: 20 sent)
        (a_sent, a_got), (b_sent, b_got) = counts(a), counts(b)
        wait_until(lambda: metric(b, "heartbeats_sent") >= b_sent + 20, 60, "ten intervals of b's heartbeats")
        (a_sent2, a_got2), (b_sent2, b_got2) = counts(a), counts(b)
        a_sent, a_got, b_sent, b_got = a_sent2 - a_sent, a_got2 - a_got, b_sent2 - b_sent, b_got2 - b_got
        print(f"in the window: a sent {a_sent}, got {a_got}; b sent {b_sent}, got {b_got}")
        # one heartbeat per connected peer per interval: b (2 peers) sends twice what a (1 peer) sends,
        # and hears twice as many (gossiped, every node sent one per interval and heard one from each node)
        assert 1.5 <= b_sent / max(a_sent, 1) <= 2.6, (a_sent, b_sent)
        assert 1.5 <= b_got / max(a_got, 1) <= 2.6, (a_got, b_got)
        assert a_got <= a_sent * 1.4 + 2, (a_got, a_sent)  # a hears b alone, as often as it tells b

        # nothing relays: a never heard c (c is alive, and b hears it), nor c a
        assert liveness_of(a, c.did) is None and liveness_of(c, a.did) is None
        # b still hears both (read at one instant, a busy machine can show "quiet" between two heartbeats)
        wait_until(lambda: liveness_of(b, a.did) == "ok" and liveness_of(b, c.did) == "ok", 30, "b to hear a and c")
        assert a.call("formation")["connected"] == 1 and c.call("formation")["connected"] == 1
        assert metric(a, "heartbeat_streams", result="opened") >= 1
        assert metric(b, "invalid_from_peer") == 0
        for node in (a, b, c):
            assert node.stop() == 0
    except BaseException:
        for node in (a, b, c):  # what each said, for the failure's report
            print(f"--- {node.name}:", *node.drain(timeout=0.5)[-30:], sep="\n")
        raise
    finally:
        for node in (a, b, c):
            node.kill()


def test_a_peer_without_the_heartbeat_protocol_is_counted_once_and_not_retried(tmp_path):
    # sync rounds every 0.5 s (the harness's: 2 s): three of them below are the window of "not retried"
    node = Node(tmp_path, "node", env={"MESHNODE_LOG_LEVEL": "debug", "MESHNODE_NET_SYNC_SECONDS": "0.5"})
    try:
        node.start()
        with plain_peer(node):
            wait_until(lambda: metric(node, "heartbeat_streams", result="unsupported") == 1, 30,
                       "the node to find the plain peer without the heartbeat protocol")
            beats = metric(node, "heartbeat_streams")
            # four sync rounds later (2 s, four heartbeat intervals; a retry would come after one), nothing more
            rounds = metric(node, "sync_skipped", reason="unsupported")
            wait_until(lambda: metric(node, "sync_skipped", reason="unsupported") >= rounds + 4, 60, "sync rounds")
            assert metric(node, "heartbeat_streams") == beats == 1
            assert metric(node, "heartbeats_sent") == 0
        assert node.stop() == 0
        assert not [line for line in node.drain() if "Traceback" in line or "heartbeat/2" in line and
                    " DEBUG " not in line]
    finally:
        node.kill()
