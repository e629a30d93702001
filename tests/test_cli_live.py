"""The command line against running nodes: `sync` reports what the whole session moved,
`note list` (through the node's socket) shows who wrote each note, `find` prints text."""

from __future__ import annotations

import json
import re

from meshharness import Node, wait_until

# no session starts by itself after the first one: liveness never changes, the period is long
QUIET = {"MESHNODE_NET_HEARTBEAT_SECONDS": "1", "MESHNODE_NET_QUIET_AFTER_SECONDS": "120",
         "MESHNODE_NET_STALE_AFTER_SECONDS": "240", "MESHNODE_NET_DEAD_AFTER_SECONDS": "600",
         "MESHNODE_NET_SYNC_SECONDS": "3600", "MESHNODE_NET_REPUTATION_SECONDS": "86400",
         "MESHNODE_COGNITION_ENABLED": "false"}


def sessions(node: Node) -> int:
    return sum(m["value"] for m in node.call("metrics") if m["name"] == "sync_sessions")


def holds(node: Node, view: str, did: str) -> bool:
    return any(r["container_did"] == did for r in node.call(view, {"limit": 500}))


def test_sync_reports_what_the_session_moved_and_note_list_shows_authors(tmp_path):
    alice, bob = Node(tmp_path, "alice", env=QUIET), Node(tmp_path, "bob", env=QUIET)
    try:
        alice.start()
        bob.set_bootstrap(alice)
        bob.start()
        alice.cli("friend", "add", bob.did)
        bob.cli("friend", "add", alice.did)
        wait_until(lambda: sessions(alice) >= 1 and sessions(bob) >= 1, 90, "the first session after connecting")
        wait_until(lambda: any(p["name"] == "bob" for p in alice.call("peers")), 60, "alice to know bob's name")

        mine = alice.cli("diary", "add", "alice learned this").strip()
        theirs = bob.cli("diary", "add", "bob learned that").strip()
        note = bob.cli("note", "add", "for my friends", "--audience", "friends").strip()
        assert not holds(bob, "diary", mine) and not holds(alice, "notes", note)

        report = alice.cli("sync", "bob")  # a peer by name
        assert report.splitlines()[0].startswith("sent 1, received 2 container(s)"), report
        # the report comes after the transfers of both sides: everything is there already
        assert holds(bob, "diary", mine) and holds(alice, "diary", theirs) and holds(alice, "notes", note)
        again = json.loads(alice.cli("sync", bob.did, "--json"))
        assert (again["pushed"], again["fetched"]) == (0, 0)

        listed = alice.cli("note", "list").splitlines()
        short = note.removeprefix("did:hmp:container:uEi")[:10]
        assert any(re.fullmatch(rf"{short}\* \S+  bob -> friends  for my friends", line) for line in listed), listed
        assert "for my friends" in alice.cli("note", "read", short)

        found = alice.cli("find", "bob")
        assert f"did:       {bob.did}" in found and "name:      bob" in found and not found.startswith("{")
        assert json.loads(alice.cli("find", bob.did, "--json"))["did"] == bob.did
        assert alice.stop() == 0 and bob.stop() == 0
    finally:
        alice.kill()
        bob.kill()
