"""CogSync knowledge with a hop limit stops where its author said, between real nodes in a
friend chain alice - bob - carol - dave (each befriends its neighbours only): an entry
written with ``--forward 0`` stays with alice's friends (bob), one with ``--forward 1``
reaches bob's friends (carol) but not dave, and one with no limit reaches dave."""

from __future__ import annotations

from meshharness import Node, wait_until


def holds(node: Node, view: str, did: str) -> bool:
    return any(r["container_did"] == did for r in (node.try_call(view, {"limit": 500}) or []))


def test_knowledge_hop_limit_in_a_friend_chain(tmp_path):
    a, b, c, d = (Node(tmp_path, n) for n in ("alice", "bob", "carol", "dave"))
    nodes = [a, b, c, d]
    try:
        a.start()
        for n in (b, c, d):
            n.set_bootstrap(a)  # everyone is connected to everyone through alice; only friends share
            n.start()
        for x, y in ((a, b), (b, a), (b, c), (c, b), (c, d), (d, c)):
            x.call("friend", {"did": y.did})

        # written with the CLI, through the running node
        stay = a.cli("diary", "add", "for my friends only", "--forward", "0").strip()
        one_on = a.cli("diary", "add", "my friends may pass it on once", "--forward", "1").strip()
        concept = a.cli("concept", "add", "mesh", "--forward", "1").strip()
        free = a.cli("diary", "add", "anyone's friends may have it").strip()

        wait_until(lambda: holds(d, "diary", free), 120, "dave to get the unlimited entry, three hops away")
        wait_until(lambda: holds(b, "diary", stay), 60, "bob (alice's friend) to get the forward-0 entry")
        wait_until(lambda: holds(c, "diary", one_on) and holds(c, "concepts", concept), 60,
                   "carol (bob's friend) to get the forward-1 entry and concept")
        # what carol holds now she would offer dave at her next session if the limit were
        # not kept; an entry written after this point reaching dave proves such a session ran
        later = a.cli("diary", "add", "written after carol got the forward-1 entry").strip()
        wait_until(lambda: holds(d, "diary", later), 120, "dave to get the later unlimited entry")
        assert not holds(c, "diary", stay) and not holds(d, "diary", stay)
        assert not holds(d, "diary", one_on) and not holds(d, "concepts", concept)
        assert holds(b, "concepts", concept)
        for n in nodes:
            assert n.stop() == 0
    finally:
        for n in nodes:
            n.kill()
