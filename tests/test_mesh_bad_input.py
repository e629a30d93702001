"""A peer sending bad input is refused, counted and cut off; the node keeps serving others."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from meshharness import Node, metric, wait_until
from meshnode.base.container import build_container, now_ms
from meshnode.base.identity.keys import NodeKey

EVIL = Path(__file__).with_name("evil_peer.py")


def test_bad_input_is_rejected_counted_and_the_peer_cut_off(tmp_path):
    victim = Node(tmp_path, "victim", env={"MESHNODE_PEERS_INVALID_THRESHOLD": "8"})
    honest = Node(tmp_path, "honest")
    try:
        victim.start()
        honest.set_bootstrap(victim)
        honest.start()
        wait_until(lambda: any(r["liveness"] == "ok" for r in victim.call("peers")), 30, "the honest peer")
        good = build_container(NodeKey.generate(), "x_test", {"n": 1}, timestamp_ms=now_ms()).to_bytes().hex()
        address = next(a for a in victim.addresses if "/ip4/127.0.0.1/" in a)
        result = subprocess.run([sys.executable, str(EVIL), address, good, "4"], capture_output=True, text=True,
                                timeout=180)
        assert result.returncode == 0, result.stderr[-2000:]
        outcomes = [line.split(" ", 1) for line in result.stdout.splitlines()]
        first = dict(outcomes[:6])
        assert first["garbage"] == "reset"  # a frame cut short: refused and counted as bad_frame
        assert first["oversized"] == "reset"
        assert first["non_deterministic"] == "error:bad_message"
        assert first["forged"].startswith("rejected:")
        assert first["future"] == "rejected:future_timestamp"
        assert first["replayed"] in ("accepted", "duplicate")
        assert outcomes[-1][1] == "reset", outcomes  # cut off: the node no longer answers it
        assert sum(1 for _, o in outcomes if o == "reset") > len(outcomes) // 3

        # counted, by kind, and the peer was cut off
        assert metric(victim, "invalid_from_peer", code="future_timestamp") >= 1
        assert metric(victim, "invalid_from_peer", code="frame_too_large") >= 1
        assert metric(victim, "invalid_from_peer", code="bad_frame") >= 1
        assert metric(victim, "invalid_from_peer") >= 8
        assert metric(victim, "peers_cut_off") >= 1
        assert metric(victim, "connections_refused", reason="banned") >= 1  # its reconnects were closed
        standing = {r["did"]: r["invalid"] for r in victim.call("peers")}
        assert max(v or 0 for v in standing.values()) >= 8

        # the honest peer is served as before, both ways
        mine = honest.call("note_add", {"text": "still here", "audience": "public"})["did"]
        assert victim.call("fetch", {"did": honest.did, "container_did": mine}, timeout=60)["fetched"] == [mine]
        theirs = victim.call("note_add", {"text": "and you?", "audience": "public"})["did"]
        assert honest.call("fetch", {"did": victim.did, "container_did": theirs}, timeout=60)["fetched"] == [theirs]
        assert victim.stop() == 0 and honest.stop() == 0
    finally:
        victim.kill()
        honest.kill()
