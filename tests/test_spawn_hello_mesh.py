"""A child's hello and its invitation on the mesh: gossip never relays either, and a parent that
takes nothing from peers below [sync] min_trust still answers a new child's hello
(spawn/invitation.py with net/mesh_gossip.py and net/mesh_exchange.py, driven without a network)."""

from __future__ import annotations

from test_mesh_cost import Message, mesh_for, peer
from test_spawn_bundle import ADDRS, HASH, HOUR, hello_for

from meshnode.base.container import now_ms
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.notes import make_note
from meshnode.engines.spawn.invitation import make_invitation


async def test_gossip_never_relays_a_hello_or_an_invitation(tmp_path):
    """Point to point: a gossip validator that passes one makes every node relay it (the hello holds
    the invitation, whose holder may claim it), even though no node stores it."""
    now = now_ms()
    parent, forwarder = NodeKey.generate(), NodeKey.generate()
    inv = make_invitation(parent, kind="trained", name="kid", depth=1, expires_ms=now + HOUR, bundle_hash=HASH,
                          addresses=ADDRS, now_ms=now)
    child, hello = hello_for(inv, at=now)
    mesh, store = await mesh_for(tmp_path)
    async with store:
        for c, author in ((hello, child), (inv, parent)):
            message = Message(c.to_bytes(), peer(author).to_bytes())
            assert not await mesh.container_gossip.validate_container(peer(forwarder), message), c.cls
        assert mesh.metrics.get("gossip_ignored", reason="point_to_point") == 2
        assert mesh.metrics.get("invalid_from_peer") == 0  # the forwarder is not blamed for it


async def test_a_parent_with_sync_min_trust_still_hears_its_childs_hello(tmp_path):
    """A new child has no reputation yet: a parent taking nothing from peers below [sync] min_trust
    must still answer the hello (judged by its invitation), and still take nothing else from it."""
    now = now_ms()
    parent = NodeKey.generate()
    inv = make_invitation(parent, kind="trained", name="kid", depth=1, expires_ms=now + HOUR, bundle_hash=HASH,
                          addresses=ADDRS, now_ms=now)
    child, hello = hello_for(inv, at=now)
    seen = []

    async def hook(h, did):
        seen.append(did)
        return None

    mesh, store = await mesh_for(tmp_path, on_hello=hook, min_trust=0.9)
    async with store:
        ack = await mesh.exchange._serve_push(child.did, [hello.to_bytes()], host="203.0.113.5")
        assert seen == [child.did] and ack["accepted"] == [hello.did], ack
        other = make_note(child, "hi", now_ms=now, audience="public").to_bytes()
        for items in ([other], [hello.to_bytes(), other]):
            assert (await mesh.exchange._serve_push(child.did, items, host="203.0.113.5"))["code"] == "untrusted"
        assert seen == [child.did] and mesh.metrics.get("exchange_refused", reason="untrusted") == 2
