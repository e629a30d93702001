"""Input that is costly to decode is charged by its cost: a peer sending frames that take the node
long to refuse is cut off after a few of them, not after 20, and the node keeps serving (real processes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from meshharness import Node, metric, wait_until
from meshnode.base.container import build_container, now_ms
from meshnode.base.identity.keys import NodeKey

EVIL = Path(__file__).with_name("evil_peer.py")


def test_a_peer_sending_costly_frames_is_cut_off_after_a_few(tmp_path):
    victim = Node(tmp_path, "victim")  # the default threshold: 20 invalid inputs of weight 1
    honest = Node(tmp_path, "honest")
    try:
        victim.start()
        honest.set_bootstrap(victim)
        honest.start()
        wait_until(lambda: any(r["liveness"] == "ok" for r in victim.call("peers")), 30, "the honest peer")
        good = build_container(NodeKey.generate(), "x_test", {"n": 1}, timestamp_ms=now_ms()).to_bytes().hex()
        address = next(a for a in victim.addresses if "/ip4/127.0.0.1/" in a)
        result = subprocess.run([sys.executable, str(EVIL), address, good, "0", "--costly", "10"],
                                capture_output=True, text=True, timeout=300, env=victim.env)
        assert result.returncode == 0, result.stderr[-2000:]
        outcomes = [line.split(" ", 1)[1] for line in result.stdout.splitlines() if line.startswith("costly ")]
        assert len(outcomes) == 10, result.stdout
        assert outcomes[-3:] == ["reset"] * 3, outcomes
        assert metric(victim, "peers_cut_off") == 1
        # each frame weighs by its bytes (14 for 900 KiB) and CPU time: worked on at most twice
        assert 1 <= metric(victim, "invalid_from_peer") <= 2
        assert metric(victim, "connections_refused", reason="banned") >= 1  # its later attempts were closed

        # the honest peer is still served
        mine = honest.call("note_add", {"text": "still here", "audience": "public"})["did"]
        assert victim.call("fetch", {"did": honest.did, "container_did": mine}, timeout=60)["fetched"] == [mine]
        assert victim.stop() == 0 and honest.stop() == 0
    finally:
        victim.kill()
        honest.kill()


def test_an_address_whose_identities_keep_getting_cut_off_is_refused_at_connect(tmp_path):
    """Identities are free: after two of them from 127.0.0.1 were cut off, a third new one is
    closed as it connects (every process here is on 127.0.0.1, so the threshold is lowered to 2)."""
    victim = Node(tmp_path, "victim", env={"MESHNODE_PEERS_ADDRESS_CUTOFFS": "2"})
    try:
        victim.start()
        good = build_container(NodeKey.generate(), "x_test", {"n": 1}, timestamp_ms=now_ms()).to_bytes().hex()
        address = next(a for a in victim.addresses if "/ip4/127.0.0.1/" in a)
        for expected in (1, 2):  # two throw-away identities, each cut off by its costly frames
            result = subprocess.run([sys.executable, str(EVIL), address, good, "0", "--costly", "3"],
                                    capture_output=True, text=True, timeout=300, env=victim.env)
            assert result.returncode == 0, result.stderr[-2000:]
            assert metric(victim, "peers_cut_off") == expected
        assert metric(victim, "addresses_cut_off") == 1
        result = subprocess.run([sys.executable, str(EVIL), address, good, "0", "--reconnect", "1"],
                                capture_output=True, text=True, timeout=300, env=victim.env)
        assert result.stdout.splitlines() == ["reconnect closed"], result.stdout + result.stderr[-2000:]
        assert metric(victim, "connections_refused", reason="address_banned") >= 1
        assert victim.stop() == 0
    finally:
        victim.kill()
