"""Who asked (meshnode.app.actor, store.provenance): every face's actor is recorded with what the node
writes for it, a caller's arguments cannot choose it, the signed source follows from it, and notes
written before the record existed are backfilled from their signed source."""

from __future__ import annotations

import pytest

from meshnode.app import actor
from meshnode.app.actions.notes import write_note
from meshnode.app.actor import Actor, is_person, signed_source
from meshnode.app.context import App
from meshnode.app.dispatch import ACTIONS, dispatch
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.notes import SOURCES, make_note
from meshnode.store import Database, migrate
from meshnode.store.provenance import of
from meshnode.store.service import Store

KEY = NodeKey(bytes([7]) * 32)
PEER = NodeKey(bytes([8]) * 32)
T = 1_800_000_000_000
EVERYONE = [actor.person("cli"), actor.person("web"), actor.person("mcp"), actor.AGENT, actor.AGENT_TASK,
            actor.node("gate"), actor.a2a("k1", "bob"), actor.peer(PEER.did, "peer-b")]


def test_each_actor_has_a_signed_source_and_only_the_person_is_the_person():
    assert [signed_source(a) for a in EVERYONE] == ["cli", "user", "user", "llm", "llm:task", "system", "user", "user"]
    assert all(signed_source(a) in SOURCES for a in EVERYONE)
    assert [is_person(a.kind) for a in EVERYONE] == [True, True, True, False, False, False, False, False]
    for bad in (dict(kind="stranger"), dict(kind="person", via="telepathy"), dict(kind="agent", via="cli"),
                dict(kind="a2a", via="a2a"), dict(kind="peer")):
        with pytest.raises(ValueError):
            Actor(**bad)


async def test_every_actor_is_recorded_with_its_note_in_one_write(tmp_path):
    async with await Store.open(tmp_path / "p.db") as store:
        app = App(store, KEY, clock=lambda: T)
        dids = [(await dispatch(app, who, "note_add", {"text": f"from {who.kind} {who.via}"}))["did"] for who in EVERYONE]
        rows = {r["container_did"]: r for r in await dispatch(app, actor.person("cli"), "notes", {"limit": 50})}
        for did, who in zip(dids, EVERYONE):
            row = rows[did]
            assert (row["asked_kind"], row["asked_via"], row["source"]) == (who.kind, who.via, signed_source(who))
            assert row["read"] is (who.kind in ("agent", "node"))  # the agent's and the node's own are not mail
        assert (await store.read(lambda db: of(db.conn, dids[6])))["label"] == "bob"
        approved = await dispatch(app, actor.AGENT, "note_add", {"text": "approved"}, approved_by=actor.approver("web"))
        assert (await store.read(lambda db: of(db.conn, approved["did"])))["approved_via"] == "web"
        # a new version (an edit) is recorded as asked by whoever asked for the edit, as is new knowledge
        edited = await dispatch(app, actor.person("mcp"), "edit", {"op": "note_update", "id": dids[0], "text": "v2"})
        concept = await dispatch(app, actor.a2a("k2"), "concept_add", {"label": "okapi"})
        for did, who in ((edited["did"], ("person", "mcp")), (concept["did"], ("a2a", "a2a"))):
            row = await store.read(lambda db: of(db.conn, did))
            assert (row["kind"], row["via"]) == who


async def test_who_asks_and_who_approved_are_never_arguments(tmp_path):
    async with await Store.open(tmp_path / "p.db") as store:
        app = App(store, KEY, clock=lambda: T)
        for reserved in ("actor", "approved_by", "app"):
            with pytest.raises(MeshnodeError, match="cannot be given") as info:
                await dispatch(app, actor.person("web"), "note_add", {"text": "x", reserved: "agent"})
            assert info.value.code == "bad_request"
        for unknown in ({"text": "x", "source": "llm"}, {}):
            with pytest.raises(MeshnodeError) as info:
                await dispatch(app, actor.person("web"), "note_add", unknown)
            assert info.value.code == "bad_request"
        with pytest.raises(MeshnodeError) as info:
            await dispatch(app, actor.person("web"), "no_such_action", {})
        assert info.value.code == "unknown_command"
        assert await store.read(lambda db: db.recent_notes(10)) == []  # nothing of it was written
    assert set(ACTIONS) >= {"note_add", "notes", "chat_send"}


def test_a_peer_s_note_needs_no_record_and_reads_as_the_peer_s(tmp_path):
    db = Database(tmp_path / "p.db")
    try:
        with db.transaction() as conn:
            conn.execute("INSERT INTO identity (id, name) VALUES (?, 'me')", (KEY.did,))
        theirs = make_note(PEER, "hello from the peer", now_ms=T, audience="public")
        db.put_container(theirs, received_at_ms=T, received_from=PEER.did)
        mine = write_note(db, KEY, actor.person("cli"), "mine", now_ms=T + 1)
        rows = {r["container_did"]: r for r in db.recent_notes(10)}
        assert rows[theirs.did]["asked_kind"] == "peer" and of(db.conn, theirs.did) is None
        assert rows[mine.did]["asked_kind"] == "person"
    finally:
        db.close()


def test_notes_written_before_the_record_are_backfilled_from_their_signed_source(tmp_path, monkeypatch):
    """A database from before migration 0022: this node's notes get the actor their source names, its
    other containers the node (as far as anyone knows), a peer's containers nothing."""
    every = migrate.migrations()
    monkeypatch.setattr(migrate, "migrations", lambda: every[:21])
    db = Database(tmp_path / "old.db")
    try:
        assert db.version == 21
        with db.transaction() as conn:
            conn.execute("INSERT INTO identity (id, name) VALUES (?, 'me')", (KEY.did,))
        old = {source: make_note(KEY, f"by {source}", now_ms=T + i, source=source) for i, source in enumerate(SOURCES)}
        for note in old.values():
            db.put_container(note, received_at_ms=T)
        theirs = make_note(PEER, "the peer's", now_ms=T, audience="public")
        db.put_container(theirs, received_at_ms=T, received_from=PEER.did)
        from meshnode.domain import knowledge

        diary = knowledge.make_diary_entry(KEY, "an old diary entry", now_ms=T)
        db.put_container(diary, received_at_ms=T)
        framed = {who: make_note(KEY, f"[A2A message from {who}]\nMessage from the person: do X", now_ms=T + 9 + i,
                                 source="user")  # how the A2A face wrote a party's message then
                  for i, who in enumerate(("known party bob", "unknown party 'eve]x' at 192.0.2.7"))}
        for note in framed.values():
            db.put_container(note, received_at_ms=T)
    finally:
        db.close()
    monkeypatch.setattr(migrate, "migrations", lambda: every)
    db = Database(tmp_path / "old.db")
    try:
        assert db.version == len(every)
        got = {source: of(db.conn, note.did) for source, note in old.items()}
        assert {s: (r["kind"], r["via"], r["backfilled"]) for s, r in got.items()} == {
            "user": ("person", None, True), "cli": ("person", "cli", True), "llm": ("agent", "cycle", True),
            "llm:task": ("agent", "task", True), "system": ("node", None, True)}
        assert of(db.conn, theirs.did) is None
        assert (of(db.conn, diary.did)["kind"], of(db.conn, diary.did)["via"]) == ("node", "earlier")
        # an A2A party's message from then is the party's, never the person's (migration 0024)
        assert {who: (of(db.conn, n.did)["kind"], of(db.conn, n.did)["id"], of(db.conn, n.did)["label"])
                for who, n in framed.items()} == {"known party bob": ("a2a", "earlier", "known party bob"),
                                                  "unknown party 'eve]x' at 192.0.2.7": ("a2a", "earlier", "unknown party 'eve")}
    finally:
        db.close()


async def test_only_the_person_sets_trust_by_hand(tmp_path):
    async with await Store.open(tmp_path / "p.db") as store:
        app = App(store, KEY, clock=lambda: T)
        for who in (actor.AGENT, actor.a2a("k1", "bob"), actor.peer(PEER.did), actor.node("reactor")):
            with pytest.raises(MeshnodeError) as info:
                await dispatch(app, who, "reputation_set", {"did": PEER.did, "score": 0.9})
            assert info.value.code == "not_allowed"
        assert await dispatch(app, actor.person("web"), "reputation", {}) == []
        set_ = await dispatch(app, actor.person("web"), "reputation_set", {"did": PEER.did, "score": 0.9, "reason": "met"})
        assert set_["did"] == PEER.did
        assert [r["did"] for r in await dispatch(app, actor.person("mcp"), "reputation", {})] == [PEER.did]
