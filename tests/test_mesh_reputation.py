"""Reputation from ordinary traffic, with real OS processes: two nodes that only gossip and
sync (no consensus, no tasks) hold evidence about each other within seconds of meeting, not
after a full reputation period."""

from __future__ import annotations

import json
import time

from meshharness import Node, wait_until
from test_mesh_consensus import trust_in

# a period far longer than the test: only the early first round can fold the evidence in time
SLOW_ROUNDS = {"MESHNODE_NET_REPUTATION_SECONDS": "3600", "MESHNODE_NET_REPUTATION_FIRST_SECONDS": "1"}


def test_gossip_and_sync_are_evidence_folded_in_soon_after_start(tmp_path):
    a, b = Node(tmp_path, "a", env=SLOW_ROUNDS), Node(tmp_path, "b", env=SLOW_ROUNDS)
    try:
        a.start()
        b.set_bootstrap(a)
        started = time.monotonic()
        b.start()
        wait_until(lambda: b.did in trust_in(a) and a.did in trust_in(b), 120,
                   "each node to hold evidence about the other")
        print(f"both hold reputation {time.monotonic() - started:.1f} s after the second node's start began")
        for node, other in ((a, b), (b, a)):
            listed = {r["did"]: r for r in json.loads(node.cli("reputation", "list", "--json"))}
            assert listed[other.did]["basis"] == "direct" and listed[other.did]["score"] > 0.5, listed
            shown = json.loads(node.cli("reputation", "show", other.did, "--json"))
            assert shown["counts"].get("valid_container", 0) >= 1, shown  # sync sessions, containers
        assert a.stop() == 0 and b.stop() == 0
    finally:
        a.kill()
        b.kill()


def test_sync_sessions_count_once_per_peer_per_hour():
    """Being connected is cheap: sessions every few seconds must not lift an identity's trust."""
    from meshnode.base.metrics import Metrics
    from meshnode.net.mesh_reputation import SESSION_CREDIT_MS, Reputation
    from meshnode.net.standing import Standing
    from meshnode.store.known import KnownAuthors

    class Peerless(Reputation):
        now = 1_000

        def __init__(self):
            super().__init__(None, None, Standing(), KnownAuthors(set()), Metrics(), lambda: self.now, publish=None)

    n = Peerless()
    for _ in range(10):
        n.credit_sync_session("did:key:peer")
        n.now += 30_000
    assert n.standing.summary("did:key:peer")["valid"] == 1
    n.now = 1_000 + SESSION_CREDIT_MS
    n.credit_sync_session("did:key:peer")
    assert n.standing.summary("did:key:peer")["valid"] == 2
