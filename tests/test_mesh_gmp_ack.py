"""A push ack tells a GMP container held aside (pending: it names what the receiver lacks) from a
duplicate (protocols/mesh.md section 3, gmp.md 4.1), in-process with fake streams (tests/test_mesh_cost.py's)."""

from __future__ import annotations

import trio

from meshnode.base.container import now_ms
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.gmp import build
from meshnode.net import exchange
from test_mesh_cost import FakeStream, mesh_for, peer, push_frame


def _unseen_goal_and_notes(n: int):
    """An author, its goal (not pushed) and ``n`` notes about it: each held aside where pushed alone."""
    author = NodeKey.generate()
    goal = build.goal(author, {"title": "g", "status": "active", "audience": "participants"}, now_ms=now_ms())
    return author, goal, [build.entry(author, "reflection", {}, now_ms=now_ms() + i, about=goal.did, summary="why")
                          for i in range(1, n + 1)]


async def _push(mesh, author, c) -> dict:
    stream = FakeStream(push_frame([c.to_bytes()]), peer(author))
    await mesh.exchange.serve(stream)
    return exchange.check_response(stream.answer(), "ack")


def test_a_pending_container_is_acked_as_pending_not_as_a_duplicate(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path)
        async with store:
            author, goal, [note] = _unseen_goal_and_notes(1)

            async def push(c) -> dict:
                return await _push(mesh, author, c)

            for _ in range(2):  # held aside, and again when pushed again: never a duplicate
                ack = await push(note)
                assert (ack["accepted"], ack["duplicates"], ack["pending"], ack["rejected"]) == \
                    ([], [], [note.did], []), ack
            assert (await push(goal))["accepted"] == [goal.did]  # what it names arrives: it is admitted
            ack = await push(note)
            assert (ack["duplicates"], ack["pending"]) == ([note.did], []), ack

    trio.run(main)


def test_an_ack_from_a_node_that_predates_pending_reads_as_none_pending():
    ack = exchange.check_response({"op": "ack", "accepted": [], "duplicates": ["did:x"], "rejected": []}, "ack")
    assert ack["pending"] == []


def test_a_gmp_container_pushed_again_by_its_author_is_told_to_the_gmp_service(tmp_path):
    """Its author pushing it again means it lacks this node's receipt (gmp.md 6.1): the GMP service
    hears of it (``arrived``) and pushes the receipt again. Pushed again by anyone else: not told."""
    class Heard:
        def __init__(self):
            self.calls = []

        def arrived(self, did, received_from):
            self.calls.append((did, received_from))

    async def main():
        mesh, store = await mesh_for(tmp_path)
        heard = Heard()
        mesh.hooks.serve_gmp(heard)
        async with store:
            author, relay = NodeKey.generate(), NodeKey.generate()
            goal = build.goal(author, {"title": "g", "status": "active", "audience": "participants"},
                              now_ms=now_ms())
            for sender in (author, relay, author):
                await mesh.exchange.serve(FakeStream(push_frame([goal.to_bytes()]), peer(sender)))
            assert heard.calls == [(goal.did, author.did), (goal.did, author.did)]  # new, then again by its author

    trio.run(main)


def test_meshnode_send_tells_a_container_held_aside_from_one_already_there(monkeypatch, capsys):
    from types import SimpleNamespace

    from meshnode.faces.cli import node

    answer = {"op": "ack", "accepted": [], "duplicates": ["did:hmp:container:old"],
              "pending": ["did:hmp:container:waits"], "rejected": []}
    monkeypatch.setattr(node, "_config", lambda args: None)
    monkeypatch.setattr(node, "agent_did", lambda config, did: did)
    monkeypatch.setattr(node, "read_limited_file", lambda path, limit: b"\x00")
    monkeypatch.setattr(node, "_ask_node", lambda config, name, args: answer)
    assert node.cmd_send(SimpleNamespace(file="c.cbor", did="did:key:z6Mkpeer")) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["already there did:hmp:container:old",
                   "held aside did:hmp:container:waits (it names containers the peer lacks; the peer fetches them)"]


def test_a_container_not_kept_aside_because_its_author_has_too_many_pending_is_acked_busy(tmp_path, monkeypatch):
    """The ack says ``pending`` only for a container held aside: one the pending set had no room for
    (its author, its sender or the whole set at the limit) is not kept, and is told as busy (push it
    again later), not as held aside for the peer to fetch what it names."""
    from meshnode.records.gmp import store_admission

    monkeypatch.setattr(store_admission, "MAX_PER_AUTHOR", 1)

    async def main():
        mesh, store = await mesh_for(tmp_path)
        async with store:
            author, _, (kept, dropped) = _unseen_goal_and_notes(2)
            answers = [await _push(mesh, author, c) for c in (kept, dropped)]
            assert answers[0]["pending"] == [kept.did]
            waiting = await store.read(lambda db: [r[0] for r in db.conn.execute("SELECT did FROM gmp_pending")])
            assert waiting == [kept.did]
            assert (answers[1]["pending"], [r["code"] for r in answers[1]["rejected"]]) == ([], ["busy"]), answers[1]

    trio.run(main)
