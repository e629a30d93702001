"""A peer cut off for invalid input stays cut off: its connections are refused for the ban's
duration, and bad gossip is counted however often it comes (real processes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from meshharness import Node, metric, wait_until
from meshnode.base.container import build_container, now_ms
from meshnode.base.identity.keys import NodeKey

EVIL = Path(__file__).with_name("evil_peer.py")


def evil(node: Node, *args: str, **kwargs) -> subprocess.Popen:
    address = next(a for a in node.addresses if "/ip4/127.0.0.1/" in a)
    return subprocess.Popen([sys.executable, str(EVIL), address, *args], env=node.env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def test_a_banned_peer_that_reconnects_is_closed_and_counted_each_time(tmp_path):
    victim = Node(tmp_path, "victim", env={"MESHNODE_PEERS_INVALID_THRESHOLD": "4"})
    try:
        victim.start()
        good = build_container(NodeKey.generate(), "x_test", {"n": 1}, timestamp_ms=now_ms()).to_bytes().hex()
        seed = NodeKey.generate().seed().hex()
        proc = evil(victim, good, "1", "--reconnect", "3", "--seed", seed, stdin=subprocess.DEVNULL)
        out, err = proc.communicate(timeout=180)
        assert proc.returncode == 0, err[-2000:]
        assert metric(victim, "peers_cut_off") == 1
        reconnects = [line for line in out.splitlines() if line.startswith("reconnect")]
        assert reconnects == ["reconnect closed"] * 3, out
        assert metric(victim, "connections_refused", reason="banned") >= 3
        assert victim.stop() == 0

        # the ban outlives a restart of the node that made it
        victim.start()
        proc = evil(victim, good, "0", "--reconnect", "1", "--seed", seed, stdin=subprocess.DEVNULL)
        out, err = proc.communicate(timeout=120)
        assert out.splitlines() == ["reconnect closed"], (out, err[-2000:])
        assert metric(victim, "connections_refused", reason="banned") >= 1
        assert victim.stop() == 0
    finally:
        victim.kill()


def test_bad_gossip_sent_again_is_counted_again(tmp_path):
    """Pubsub caches a failed validation by message id (the data's hash) and drops the same
    data from anyone for minutes without asking the node: each sender is still counted."""
    victim = Node(tmp_path, "victim")
    garbage = b"not a container at all".hex()
    try:
        victim.start()
        for expected in (1, 2):  # two peers send the same bad gossip
            proc = evil(victim, "00", "0", "--gossip", garbage, stdin=subprocess.PIPE)
            try:
                assert proc.stdout.readline().strip() == "gossip published", proc.stderr.read()[-2000:]
                wait_until(lambda: metric(victim, "invalid_from_peer") >= expected, 30,
                           f"the victim to count bad gossip #{expected}")
            finally:
                proc.stdin.close()
                proc.wait(timeout=30)
        assert metric(victim, "invalid_from_peer", code="invalid_again") == 1
        assert victim.stop() == 0
    finally:
        victim.kill()
