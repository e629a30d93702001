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
        wait_until(lambda: has(d, note), 60, "dora (online friend) to get the note (pushed at once)")
        wait_until(lambda: has(d, onward) and any(r["container_did"] == diary for r in (d.try_call("diary") or [])),
                   60, "dora to hold the onward note and the diary entry (by sync) before alice leaves")
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


def in_view(node: Node, view: str, did: str) -> bool:
    return any(r["container_did"] == did for r in (node.try_call(view, {"limit": 500}) or []))


def test_selective_sync_takes_only_what_a_node_wants_and_nothing_from_untrusted_peers(tmp_path):
    writer = Node(tmp_path, "writer")
    picky = Node(tmp_path, "picky", env={"MESHNODE_SYNC_CLASSES": "diary_entry", "MESHNODE_SYNC_TAGS": "mesh"})
    wary = Node(tmp_path, "wary", env={"MESHNODE_SYNC_MIN_TRUST": "0.9"})  # above everyone's default 0.5
    nodes = [writer, picky, wary]
    try:
        writer.start()
        for n in (picky, wary):
            n.set_bootstrap(writer)
            n.start()
        for x in nodes:
            for y in nodes:
                if x is not y:
                    x.call("friend", {"did": y.did})
        wanted = writer.call("diary_add", {"text": "about the mesh", "topics": ["mesh"]})["did"]
        other_topic = writer.call("diary_add", {"text": "about lunch", "topics": ["food"]})["did"]
        concept = writer.call("concept_add", {"label": "mesh"})["did"]
        from_wary = wary.call("diary_add", {"text": "the wary node's entry", "topics": ["mesh"]})["did"]

        wait_until(lambda: in_view(picky, "diary", wanted), 60, "the picky node to get the entry it wants")
        wait_until(lambda: in_view(writer, "diary", from_wary), 60, "the writer to get the wary node's entry")
        wait_until(lambda: in_view(picky, "diary", from_wary), 60, "the picky node to get the wary node's entry")
        assert not in_view(picky, "diary", other_topic) and not in_view(picky, "concepts", concept)
        # the wary node gives what it may but takes nothing from peers below its min_trust
        assert not any(in_view(wary, "diary", d) for d in (wanted, other_topic))
        assert not in_view(wary, "concepts", concept)
        for n in nodes:
            assert n.stop() == 0
    finally:
        for n in nodes:
            n.kill()
