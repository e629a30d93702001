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


def test_sync_reports_what_the_session_moved_and_note_list_shows_authors(tmp_path, run_cli):
    """The nodes are processes; the commands run in-process against their homes."""
    alice, bob = Node(tmp_path, "alice", env=QUIET), Node(tmp_path, "bob", env=QUIET)

    def cli(node: Node, *args) -> str:
        result = run_cli("--home", node.home, *args, env=QUIET)
        assert result.returncode == 0, result.stderr
        return result.stdout

    try:
        alice.start()
        bob.set_bootstrap(alice)
        bob.start()
        cli(alice, "friend", "add", bob.did)
        cli(bob, "friend", "add", alice.did)
        wait_until(lambda: sessions(alice) >= 1 and sessions(bob) >= 1, 90, "the first session after connecting")
        wait_until(lambda: any(p["name"] == "bob" for p in alice.call("peers")), 60, "alice to know bob's name")

        mine = cli(alice, "diary", "add", "alice learned this").strip()
        theirs = cli(bob, "diary", "add", "bob learned that").strip()
        note = cli(bob, "note", "add", "for my friends", "--audience", "friends").strip()
        wait_until(lambda: holds(alice, "notes", note), 30, "bob's friends note to be pushed to alice")
        assert not holds(bob, "diary", mine) and not holds(alice, "diary", theirs)  # knowledge waits for a sync

        report = cli(alice, "sync", "bob")  # a peer by name
        assert report.splitlines()[0].startswith("sent 1, received 1 container(s)"), report
        # the report comes after the transfers of both sides: everything is there already
        assert holds(bob, "diary", mine) and holds(alice, "diary", theirs) and holds(alice, "notes", note)
        again = json.loads(cli(alice, "sync", bob.did, "--json"))
        assert (again["pushed"], again["fetched"]) == (0, 0)

        listed = cli(alice, "note", "list").splitlines()
        short = note.removeprefix("did:hmp:container:uEi")[:10]
        assert any(re.fullmatch(rf"{short}\* \S+  bob -> friends  for my friends", line) for line in listed), listed
        assert "for my friends" in cli(alice, "note", "read", short)

        found = cli(alice, "find", "bob")
        assert f"did:       {bob.did}" in found and "name:      bob" in found and not found.startswith("{")
        assert json.loads(cli(alice, "find", bob.did, "--json"))["did"] == bob.did
        assert alice.stop() == 0 and bob.stop() == 0
    finally:
        alice.kill()
        bob.kill()
