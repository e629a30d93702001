"""Input that is costly to decode is charged by its cost: a peer sending frames that take the node
long to refuse is cut off after a few of them, not after 20, and the node keeps serving (real processes)."""

from __future__ import annotations

import socket
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


def answers_at_accept(port: int) -> bool:
    """Whether the node at 127.0.0.1:``port`` answers a new TCP connection (multistream-select's header,
    sent first by the listener) rather than closing it as it is accepted (an address ban). The probe
    then leaves without a handshake: one handshake strike of its own."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as probe:
        try:
            return probe.recv(64) != b""
        except ConnectionResetError:
            return False


def fail_handshake(port: int) -> None:
    """A connection that sends garbage instead of the multistream and Noise handshake, and leaves."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"\x05junk\n" * 4)


def test_identities_cut_off_at_one_address_spare_it_and_handshake_abuse_bans_it_for_a_while(tmp_path):
    """Identities are free and an address may be a NAT: an identity from 127.0.0.1 cut off for costly
    frames is banned itself, while the address still answers; three failed handshakes
    ban the address (closed as it is accepted), for one second after they stop (every process here
    is on 127.0.0.1: the thresholds are lowered)."""
    victim = Node(tmp_path, "victim", env={"MESHNODE_PEERS_ADDRESS_ABUSE": "3",
                                           "MESHNODE_PEERS_ADDRESS_BAN_SECONDS": "1"})
    try:
        victim.start()
        good = build_container(NodeKey.generate(), "x_test", {"n": 1}, timestamp_ms=now_ms()).to_bytes().hex()
        address = next(a for a in victim.addresses if "/ip4/127.0.0.1/" in a)
        port = int(address.split("/tcp/")[1].split("/")[0])
        result = subprocess.run([sys.executable, str(EVIL), address, good, "0", "--costly", "2"],
                                capture_output=True, text=True, timeout=300, env=victim.env)
        assert result.returncode == 0, result.stderr[-2000:]
        assert metric(victim, "bans", kind="identity") == 1  # a throw-away identity cut off by costly frames
        assert answers_at_accept(port)  # the identities are banned, not their address (strike 1)
        assert metric(victim, "bans", kind="address") == 0

        fail_handshake(port)
        fail_handshake(port)  # strikes 2 and 3: banned
        wait_until(lambda: metric(victim, "bans", kind="address", why="handshake") == 1, 30, "the address ban")
        assert not answers_at_accept(port)
        assert metric(victim, "connections_refused", reason="address_banned", stage="accept") >= 1
        wait_until(lambda: answers_at_accept(port), 30, "the address ban lifted once the abuse stopped")
        assert victim.stop() == 0
    finally:
        victim.kill()
