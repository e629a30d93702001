"""Junk from throw-away keys stays within the unknown-author quotas and the strangers' pool while a
friend's notes all arrive.

Real processes: a victim node, its friend, and tests/junk_flood.py pushing and
gossiping valid containers signed by fresh keys.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from meshharness import Node, metric, wait_until

AUTHOR_CAP, POOL_CAP, TOTAL_CAP = 5, 30, 40


def has(node: Node, did: str) -> bool:
    return any(r["container_did"] == did for r in (node.try_call("notes", {"limit": 500}) or []))


def test_junk_from_throwaway_keys_stays_within_quota_and_a_friends_notes_arrive(tmp_path):
    victim = Node(tmp_path, "victim", env={"MESHNODE_LIMITS_UNKNOWN_AUTHOR_CONTAINERS": str(AUTHOR_CAP),
                                           "MESHNODE_LIMITS_UNKNOWN_TOTAL_CONTAINERS": str(TOTAL_CAP),
                                           "MESHNODE_LIMITS_UNKNOWN_POOL_CONTAINERS": str(POOL_CAP),
                                           # strangers' gossip relayed at 1/s past a burst of 50: the 200
                                           # below overrun it however slowly a busy machine sends them
                                           "MESHNODE_LIMITS_UNKNOWN_GOSSIP_TOTAL_PER_SECOND": "1"})
    friend = Node(tmp_path, "friend")
    try:
        victim.start()
        friend.set_bootstrap(victim)
        friend.start()
        victim.call("friend", {"did": friend.did})
        friend.call("friend", {"did": victim.did})
        address = next(a for a in victim.addresses if "/ip4/127.0.0.1/" in a)
        flood = subprocess.Popen([sys.executable, str(Path(__file__).with_name("junk_flood.py")), address,
                                  "--authors", "20", "--per-author", "10", "--bytes", "2000", "--gossip"],
                                 env=victim.env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        notes = [friend.call("note_add", {"text": f"from a friend {i}", "audience": "public"})["did"]
                 for i in range(30)]
        out, err = flood.communicate(timeout=240)
        assert flood.returncode == 0, err[-2000:]
        tally = json.loads(out.strip().splitlines()[-1])
        for did in notes:
            wait_until(lambda did=did: has(victim, did), 60, f"the friend's note {did} at the victim")
        assert tally["rejected:quota"] > 0 and tally["accepted"] <= 20 * AUTHOR_CAP, tally
        assert metric(victim, "containers_refused", reason="author_quota") > 0
        assert metric(victim, "containers_evicted", reason="pool") > 0  # no one vouches for the junk
        assert metric(victim, "pool_admitted") > POOL_CAP
        assert metric(victim, "gossip_ignored") > 0, tally  # 200 gossiped: over the relay rate
        assert metric(victim, "invalid_from_peer") == 0  # valid junk and refusals are no one's invalid input
        assert victim.stop() == 0
        conn = sqlite3.connect(victim.home / "data" / "meshnode.db")
        try:
            per_author = dict(conn.execute(
                "SELECT sender_did, count(*) FROM containers WHERE sender_did NOT IN (?, ?) GROUP BY sender_did",
                (victim.did, friend.did)).fetchall())
            pooled = conn.execute("SELECT count(*) FROM containers WHERE pooled = 1").fetchone()[0]
            held_from_friend = conn.execute("SELECT count(*) FROM containers WHERE sender_did = ? AND class = 'note'",
                                            (friend.did,)).fetchone()[0]
        finally:
            conn.close()
        assert max(per_author.values()) <= AUTHOR_CAP, per_author
        assert sum(per_author.values()) <= TOTAL_CAP, per_author
        assert pooled <= POOL_CAP
        assert held_from_friend == len(notes)
        assert friend.stop() == 0
    finally:
        victim.kill()
        friend.kill()
