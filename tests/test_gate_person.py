"""A person's gate decisions (meshnode/records/gate/person.py): the gate's work plus the ``gate:<what>``
row the agent's context 4 shows, the same for every front end (only ``by`` differs)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from meshnode.engines.gate import GateError
from meshnode.records.gate import confirm, drafts, person
from meshnode.engines.gate.jail import Jail
from meshnode.store import Database

NOW = 1_800_000_000_000


@pytest.fixture
def env(tmp_path):
    ws = Path(os.path.realpath(tmp_path)) / "ws"
    ws.mkdir()
    (ws / "a.txt").write_bytes(b"old\n")
    db = Database(tmp_path / "db.sqlite")
    try:
        yield ws, db, Jail([ws])
    finally:
        db.close()


def log_rows(db: Database) -> list[tuple[str, object, list]]:
    return [(n, json.loads(v), json.loads(t)) for n, v, t in
            db.conn.execute("SELECT name, value, tags FROM process_log WHERE name LIKE 'gate:%' ORDER BY id")]


def test_accept_commit_rollback_each_tell_the_agent(env):
    ws, db, jail = env
    drafts.draft_write(db, jail, person.SESSION, "a.txt", b"new\n")
    drafts.listing(db, jail, person.SESSION)  # what the person was shown
    assert person.decide(db, jail, "accept", None, "web") == {"decided": ["a.txt"], "changed_since_listed": []}
    snap = person.commit(db, jail, "reviewed", "web")
    assert (ws / "a.txt").read_bytes() == b"new\n"
    before = person.rollback(db, jail, snap, "cli")
    assert (ws / "a.txt").read_bytes() == b"old\n"
    assert log_rows(db) == [
        ("gate:accept", {"decided": ["a.txt"], "changed_since_listed": []}, ["gate", "person", "web"]),
        ("gate:commit", snap, ["gate", "person", "web"]),
        (f"gate:rollback of {snap}", before, ["gate", "person", "cli"])]


def test_accept_of_a_draft_never_listed_is_named_not_taken(env):
    _, db, jail = env
    drafts.draft_write(db, jail, person.SESSION, "a.txt", b"new\n")
    assert person.decide(db, jail, "accept", ["a.txt"], "web") == {"decided": [], "changed_since_listed": ["a.txt"]}
    assert db.conn.execute("SELECT status FROM gate_drafts").fetchall() == [("pending",)]


def test_edit_is_shown_and_logged(env):
    _, db, jail = env
    drafts.draft_write(db, jail, person.SESSION, "a.txt", b"new\n")
    row = person.edit(db, jail, "a.txt", "mine\n", "web")
    assert row["path"] == "a.txt" and row["status"] == "pending"
    assert drafts.read_through(db, jail, person.SESSION, "a.txt", 100) == b"mine\n"
    # the person wrote it, so they have seen it: accepting needs no new listing
    assert person.decide(db, jail, "accept", ["a.txt"], "web")["decided"] == ["a.txt"]
    assert [n for n, _, _ in log_rows(db)] == ["gate:edit", "gate:accept"]


@pytest.mark.parametrize("call, code", [
    (lambda db, jail: person.decide(db, jail, "maybe", None, "web"), "bad_decision"),
    (lambda db, jail: person.decide(db, jail, "accept", [], "web"), "bad_arguments"),
    (lambda db, jail: person.edit(db, jail, "a.txt", "x", "web"), "not_found"),
    (lambda db, jail: person.commit(db, jail, "m", "web"), "nothing_to_commit"),
    (lambda db, jail: person.rollback(db, jail, 99, "web"), "not_found"),
    (lambda db, jail: person.answer(db, 99, True, NOW, "web"), "not_found"),
])
def test_a_refusal_tells_the_agent_nothing(env, call, code):
    _, db, jail = env
    with pytest.raises(GateError) as info:
        call(db, jail)
    assert info.value.code == code and info.value.reason
    assert log_rows(db) == []


def test_confirmation_and_limit_reset(env):
    _, db, _ = env
    req = confirm.request(db, person.SESSION, "shell", {"argv": ["rm", "x"]}, "destructive", "asks", NOW)
    row = person.answer(db, req["id"], False, NOW + 1, "web")
    assert row["status"] == "rejected" and row["decided_by"] == "web"
    marker = person.reset_limit(db, NOW + 2, "web")
    assert marker == {"at_ms": NOW + 2, "by": "web"}
    names = [(n, t) for n, _, t in log_rows(db)]
    assert names == [("gate:confirmation", ["gate", "person", "web"]), ("gate:limit reset", ["gate", "person", "web"])]
    with pytest.raises(GateError) as info:
        person.answer(db, req["id"], True, NOW + 3, "web")
    assert info.value.code == "already_decided"


def test_all_or_nothing_refuses_before_deciding(env):
    ws, db, jail = env
    (ws / "b.txt").write_bytes(b"b\n")
    drafts.draft_write(db, jail, person.SESSION, "a.txt", b"new\n")
    drafts.listing(db, jail, person.SESSION)
    drafts.draft_write(db, jail, person.SESSION, "b.txt", b"b2\n")  # drafted after the listing
    for paths, code in ((None, "not_shown"), (["a.txt", "b.txt"], "not_shown"), (["a.txt", "nope.txt"], "not_found")):
        with pytest.raises(GateError) as info:
            person.decide(db, jail, "accept", paths, "web", all_or_nothing=True)
        assert info.value.code == code and info.value.reason
    assert db.conn.execute("SELECT status FROM gate_drafts ORDER BY path").fetchall() == [("pending",), ("pending",)]
    assert log_rows(db) == []
    # a reject needs no listing; one that names a missing draft is refused whole
    assert person.decide(db, jail, "reject", ["b.txt"], "web", all_or_nothing=True)["decided"] == ["b.txt"]
    assert person.decide(db, jail, "accept", ["a.txt"], "web", all_or_nothing=True)["decided"] == ["a.txt"]
