"""Liveness across a restart, with real processes: a node that comes back is `ok` at once."""

from __future__ import annotations

from meshharness import Node, metric, wait_until


def liveness_of(observer: Node, did: str) -> str | None:
    rows = observer.try_call("peers") or []
    return next((r["liveness"] for r in rows if r["did"] == did), None)


def test_a_restarted_node_is_ok_again_with_its_first_heartbeats(tmp_path):
    """A restarted node counts its heartbeats from 1 again; its peers must take them (their
    timestamps are newer), not wait until the count passes the one before the restart."""
    fast = {"MESHNODE_NET_HEARTBEAT_SECONDS": "0.1", "MESHNODE_NET_QUIET_AFTER_SECONDS": "1",
            "MESHNODE_NET_STALE_AFTER_SECONDS": "2"}  # 80 heartbeats in 8 s, not 40
    a = Node(tmp_path, "a", env=fast)
    b = Node(tmp_path, "b", env=fast)
    try:
        a.start()
        b.set_bootstrap(a)
        b.start()
        wait_until(lambda: liveness_of(a, b.did) == "ok", 60, "a to hear b")
        # b's heartbeat count grows well past what it will need after the restart (a rule that
        # refused seq <= the last one seen would keep b from being ok until it sent this many again)
        wait_until(lambda: metric(b, "heartbeats_sent") >= 80, 120, "b to send 80 heartbeats")
        before = metric(b, "heartbeats_sent")
        assert b.stop() == 0
        wait_until(lambda: liveness_of(a, b.did) not in ("ok", None), 60, "a to notice b is gone")

        b.start()
        wait_until(lambda: liveness_of(a, b.did) == "ok", 60, "a to see the restarted b as ok")
        sent_since = metric(b, "heartbeats_sent")
        assert sent_since < before, (sent_since, before)  # ok before its seq caught up
        # b's new heartbeats are taken, one after another (a rule refusing seq <= the one before the
        # restart would take none); a copy that raced its successor may still be ignored as older
        taken = metric(a, "heartbeats_received")
        wait_until(lambda: metric(a, "heartbeats_received") >= taken + 10, 60, "a to take b's new heartbeats")
        assert metric(b, "heartbeats_sent") < before  # taken before b's count passed the old one
        assert a.stop() == 0 and b.stop() == 0
    except BaseException:
        for node in (a, b):  # what each said, for the failure's report
            print(f"--- {node.name}:", *node.drain(timeout=0.5)[-30:], sep="\n")
        raise
    finally:
        a.kill()
        b.kill()
