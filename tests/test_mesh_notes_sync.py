"""Friends notes reach friends who were offline, from the author or a common friend; a note
that allows one more hop reaches a friend of a friend; no one else gets anything."""

from __future__ import annotations

from meshharness import Node, wait_until


def has(node: Node, did: str) -> bool:
    return any(r["container_did"] == did for r in (node.try_call("notes", {"limit": 200}) or []))


def test_store_and_forward_between_friends(tmp_path):
    a, b, d, e, stranger = (Node(tmp_path, n) for n in ("alice", "bob", "dora", "erin", "stranger"))
    nodes = [a, b, d, e, stranger]
    try:
        a.start()
        for n in (b, d, e, stranger):
            n.set_bootstrap(a)
            n.start()
        # alice's friends are bob and dora; dora and bob are friends too; erin is bob's friend
        # (not alice's); the stranger is no one's
        for x, y in ((a, b), (a, d), (b, a), (d, a), (b, d), (d, b), (b, e), (e, b)):
            x.call("friend", {"did": y.did})
        assert b.stop() == 0  # bob goes offline

        note = a.call("note_add", {"text": "for my friends", "audience": "friends"})["did"]
        onward = a.call("note_add", {"text": "pass it on", "audience": "friends", "forward": 1})["did"]
        diary = a.call("diary_add", {"text": "what I learned today"})["did"]
        private = a.call("note_add", {"text": "for me", "audience": "private"})["did"]
        wait_until(lambda: has(d, note), 60, "dora (online friend) to get the note by sync")
        assert a.stop() == 0  # the author goes offline too: only dora holds the note now

        b.set_bootstrap(d)
        b.start()
        wait_until(lambda: has(b, note), 90, "bob to get the note from dora, a common friend")
        assert not has(b, private) and not has(d, private)
        assert not has(stranger, note)  # never named, never given
        wait_until(lambda: has(e, onward), 90, "erin (bob's friend) to get the note alice let travel one hop on")
        assert not has(e, note) and not has(stranger, onward)  # no hop allowed; not a friend of anyone
        # CogSync knowledge travels the same way to friends, and to no one else
        wait_until(lambda: any(r["container_did"] == diary for r in (b.try_call("diary") or [])), 60,
                   "bob to get alice's diary entry")
        assert not any(r["container_did"] == diary for r in (stranger.try_call("diary") or []))
        metrics = {m["name"]: m["value"] for m in d.call("metrics") if not m["labels"]}
        assert metrics.get("sync_sessions", 0) >= 1
        for n in (b, d, e, stranger):
            assert n.stop() == 0
    finally:
        for n in nodes:
            n.kill()
