"""Knowledge and notes changed and withdrawn by the agent's commands (new versions, signed
retractions, hidden notes), and the agent's requests about trust and its LLMs; each through
extraction and the executor, and what another node's views make of the containers."""

from __future__ import annotations

import json

import pytest

from meshnode.records import knowledge_edits as edits
from meshnode.engines.cognition import executor
from meshnode.records.mind import registry
from meshnode.engines.cognition.commands import extract
from meshnode.records.mind.registry import Endpoint
from meshnode.base.container import build_container
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.knowledge import make_concept, make_link
from meshnode.domain.notes import make_note
from meshnode.store import Database

T0 = 1_800_000_000_000
KEY = NodeKey(bytes(32))
OTHER = NodeKey(bytes([7]) * 32)


@pytest.fixture
def db(tmp_path):
    database = Database(tmp_path / "edits.db")
    yield database
    database.close()


def run(db: Database, kind: str, args: dict, key: NodeKey = KEY, at: int = T0) -> dict:
    answer = "# Commands:\n" + json.dumps({"cmd_id": "c1", "type": kind, "args": args}) + "\n# End of commands\n"
    extraction = extract(answer)
    assert not extraction.errors, extraction.errors
    return executor.run(db, key, at, extraction.commands[0])


def ok(db: Database, kind: str, args: dict, **kw):
    result = run(db, kind, args, **kw)
    assert result["status"] == "ok", result
    return result["result"]


def refused(db: Database, kind: str, args: dict, **kw) -> str:
    result = run(db, kind, args, **kw)
    assert result["status"] == "error", result
    return result["error"]


def copy_to(db: Database, other: Database, *dids: str) -> None:
    """What sync does: the containers, verified again, into another node's store."""
    for did in dids:
        other.put_container(db.load_container(did, now_ms=T0 + 10_000), received_at_ms=T0 + 10_000)


def test_concept_and_link_updates_are_new_versions_and_deletes_retract_them_everywhere(db, tmp_path):
    cat = ok(db, "concept_add", {"label": "cat", "description": "a small feline", "tags": ["animals"]})["did"]
    animal = ok(db, "concept_add", {"label": "animal"})["did"]
    link = ok(db, "link_add", {"source": cat, "relation": "is-a", "targets": [animal]})["did"]
    v2 = ok(db, "concept_update", {"id": cat, "description": "a small domesticated feline"}, at=T0 + 1)
    assert v2["replaces"] == cat
    row = db.conn.execute("SELECT lineage, container_did, name, description, tags FROM concepts WHERE name = 'cat'"
                          ).fetchone()
    assert row == (cat, v2["did"], "cat", "a small domesticated feline", '["animals"]')  # label and tags kept
    l2 = ok(db, "link_update", {"id": link, "relation": "kind-of"}, at=T0 + 1)
    assert db.conn.execute("SELECT lineage, relation_type, to_did FROM links").fetchall() == [(link, "kind-of", animal)]
    assert "no concept" in refused(db, "concept_update", {"id": "did:hmp:container:uEiAnothing", "label": "x"})
    # a retraction: a signed version ending the lineage; gone from the views here ...
    gone = ok(db, "concept_delete", {"id": cat}, at=T0 + 2)
    assert gone["retracted"] == cat
    assert db.conn.execute("SELECT name FROM concepts").fetchall() == [("animal",)]
    c = db.load_container(gone["did"], now_ms=T0 + 3)
    assert c.payload["retracted"] is True and c.related["previous_version"] == [v2["did"]]
    ok(db, "link_delete", {"id": l2["did"]}, at=T0 + 2)  # any version's DID names the lineage
    assert db.conn.execute("SELECT count(*) FROM links").fetchone()[0] == 0
    # ... and on a node that syncs the versions, in any order
    other = Database(tmp_path / "friend.db")
    try:
        copy_to(db, other, gone["did"], cat, v2["did"], animal)
        assert other.conn.execute("SELECT name FROM concepts").fetchall() == [("animal",)]
    finally:
        other.close()


def test_only_the_author_retracts_and_others_knowledge_is_versioned_instead(db):
    theirs = make_concept(OTHER, "dog", now_ms=T0)
    db.put_container(theirs, received_at_ms=T0)
    assert "only its author retracts it" in refused(db, "concept_delete", {"id": theirs.did})
    assert db.conn.execute("SELECT name FROM concepts").fetchall() == [("dog",)]
    mine = ok(db, "concept_update", {"id": theirs.did, "label": "dog", "aliases": ["canis"]}, at=T0 + 1)
    assert db.conn.execute("SELECT container_did, aliases FROM concepts").fetchone() == (mine["did"], '["canis"]')
    diary = ok(db, "diary_add", {"text": "a thought"})["did"]
    ok(db, "diary_delete", {"id": diary}, at=T0 + 1)
    assert db.conn.execute("SELECT count(*) FROM diary_entries").fetchone()[0] == 0
    # a retraction withdraws only its author's versions: a concurrent one by someone else stays shown
    mine_later = ok(db, "concept_update", {"id": mine["did"], "description": "a good boy"}, at=T0 + 5)
    theirs_too = make_concept(OTHER, "dog", description="barks", now_ms=T0 + 2, replaces=[theirs.did])
    db.put_container(theirs_too, received_at_ms=T0 + 6)
    assert db.conn.execute("SELECT container_did, forks FROM concepts").fetchone() == (mine_later["did"], 1)
    ok(db, "concept_delete", {"id": theirs.did}, at=T0 + 6)
    assert db.conn.execute("SELECT container_did, description, forks FROM concepts").fetchone() == \
        (theirs_too.did, "barks", 0)
    # a link of several edges is not one relation to change
    edges = {theirs.did: [{"targets": [mine["did"]], "relation": "likes"}, {"targets": [diary], "relation": "x"}]}
    many = build_container(KEY, "semantic_edges", {"edges": edges}, timestamp_ms=T0)
    db.put_container(many, received_at_ms=T0)
    assert "several edges" in refused(db, "link_update", {"id": many.did, "relation": "loves"})
    one = make_link(KEY, theirs.did, "likes", [mine["did"]], now_ms=T0)
    db.put_container(one, received_at_ms=T0)
    ok(db, "link_update", {"id": one.did, "targets": [diary, mine["did"]]}, at=T0 + 1)
    assert sorted(r[0] for r in db.conn.execute("SELECT to_did FROM links WHERE lineage = ?", (one.did,))) == \
        sorted([diary, mine["did"]])


def test_notes_are_updated_by_their_author_and_hidden_locally(db, tmp_path):
    mine = ok(db, "note_add", {"text": "meet at 8", "topic": "plans"})["did"]
    theirs = make_note(OTHER, "hello from afar", now_ms=T0, source="user", audience="public")
    db.put_container(theirs, received_at_ms=T0)
    new = ok(db, "note_update", {"id": mine, "text": "meet at 9"}, at=T0 + 1)
    assert new["replaces"] == mine
    rows = dict(db.conn.execute("SELECT text, hidden FROM notes"))
    assert rows == {"meet at 8": 1, "meet at 9": 0, "hello from afar": 0}
    assert db.conn.execute("SELECT topic FROM notes WHERE text = 'meet at 9'").fetchone() == ("plans",)
    assert "only notes you wrote" in refused(db, "note_update", {"id": theirs.did, "text": "edited"})
    assert "only notes you wrote" in refused(db, "note_delete", {"id": theirs.did})  # others' mail is not the agent's
    # the person's notes and the node's notices to the person are signed with this node's key, yet not the agent's
    persons = make_note(KEY, "my own plan", now_ms=T0, source="cli", audience="public")
    notice = make_note(KEY, "The agent asks to run ...", now_ms=T0, source="system", audience="private")
    for n in (persons, notice):
        db.put_container(n, received_at_ms=T0)
        assert "only notes you wrote" in refused(db, "note_update", {"id": n.did, "text": "rewritten"})
        assert "only notes you wrote" in refused(db, "note_delete", {"id": n.did})
    # a new version of a shared note would leave the node past the gate's outbound level
    shared = ok(db, "note_add", {"text": "to everyone", "audience": "public"})["did"]
    assert "write a new note_add" in refused(db, "note_update", {"id": shared, "text": "changed"})
    ok(db, "note_delete", {"id": shared})  # hiding it here sends nothing
    for n in (persons, notice):
        edits.hide_note(db, n.did)  # the person hides what they like (meshnode note delete)
    assert [r["text"] for r in ok(db, "note_list", {})] == ["meet at 9", "hello from afar"]
    edits.hide_note(db, theirs.did)
    assert [r["text"] for r in db.recent_notes(10)] == ["meet at 9"]
    assert "no note" in refused(db, "note_delete", {"id": "did:hmp:container:uEiAnothing"})
    # the new version hides the old one on a node that gets both, whichever comes first
    other = Database(tmp_path / "friend.db")
    try:
        copy_to(db, other, new["did"], mine)
        assert dict(other.conn.execute("SELECT text, hidden FROM notes")) == {"meet at 8": 1, "meet at 9": 0}
    finally:
        other.close()
    # a note naming someone else's note hides nothing
    forged = make_note(OTHER, "I replace yours", now_ms=T0 + 2, source="user", audience="public",
                       replaces=[new["did"]])
    db.put_container(forged, received_at_ms=T0 + 2)
    assert db.conn.execute("SELECT hidden FROM notes WHERE text = 'meet at 9'").fetchone() == (0,)


def test_the_agent_asks_the_person_to_set_trust_and_changes_only_safe_llm_settings(db):
    peer = OTHER.did
    result = ok(db, "reputation_set", {"did": peer, "score": 0.9, "reason": "it answered well"})
    assert result["applied"] is False and result["asked"] == "the person"
    assert db.conn.execute("SELECT count(*) FROM agent_reputation").fetchone()[0] == 0  # nothing set
    text, source, tags = db.conn.execute("SELECT text, source, tags FROM notes").fetchone()
    assert source == "system" and "reputation-request" in tags
    assert f'meshnode reputation set {peer} 0.9 --reason "it answered well"' in text
    assert "own DID" in refused(db, "reputation_set", {"did": KEY.did, "score": 1, "reason": "me"})
    registry.add(db, Endpoint("local", "http://127.0.0.1:9/v1", "m1", 1, False, "KEY_VAR", 60.0))
    assert ok(db, "llm_update", {"name": "local", "priority": 7, "timeout_s": 300})["priority"] == 7
    [e] = registry.endpoints(db)
    assert (e.priority, e.timeout_s, e.base_url, e.api_key_env, e.validator) == (7, 300.0, "http://127.0.0.1:9/v1",
                                                                                 "KEY_VAR", False)
    for field, value in (("base_url", "http://evil.example/v1"), ("api_key_env", "OTHER"), ("validator", True)):
        answer = "# Commands:\n" + json.dumps({"cmd_id": "c1", "type": "llm_update",
                                               "args": {"name": "local", field: value}}) + "\n"
        assert extract(answer).errors  # refused before it runs
    assert "no LLM named" in refused(db, "llm_update", {"name": "nope", "priority": 1})
    # a validator's model or timeout is the person's: a broken validator must not be the agent's doing
    registry.add(db, Endpoint("judge", "http://127.0.0.1:9/v1", "m2", 0, True, None, 60.0))
    for change in ({"model": "nonexistent"}, {"timeout_s": 1}, {"priority": 3}):
        assert "is a validator" in refused(db, "llm_update", {"name": "judge", **change})
    assert [(e.model, e.timeout_s) for e in registry.endpoints(db) if e.id == "judge"] == [("m2", 60.0)]
