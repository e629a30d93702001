"""The statements behind storing a note find their rows by key, so an insert costs the same
at 100 notes as at 100,000 (bench/web.py's fill fell from ~500 to ~40 notes/s when hiding
replaced notes walked every note of the author).

Checked without timing: the query plans SQLite chooses (EXPLAIN QUERY PLAN), and the number of
virtual machine instructions one insert runs (a progress handler called on each)."""

from __future__ import annotations

import re

import pytest

from meshnode.base.identity.keys import NodeKey
from meshnode.domain.notes import make_note
from meshnode.store import Database

T0 = 1_760_000_000_000
GROWING = ("notes", "containers", "container_links", "container_tags")


@pytest.fixture(scope="module")
def key() -> NodeKey:
    return NodeKey(bytes(range(7, 39)))


@pytest.fixture
def db(tmp_path):
    d = Database(tmp_path / "node.db")
    d.conn.execute("PRAGMA synchronous=OFF")  # many small commits; durability is not what is tested here
    try:
        yield d
    finally:
        d.close()


def fill(db: Database, key: NodeKey, n: int, start: int = 0) -> list:
    notes = [make_note(key, f"note {i} #t{i % 3}", now_ms=T0 + i) for i in range(start, start + n)]
    for c in notes:
        assert db.put_container(c, received_at_ms=T0)
    return notes


def traced(db: Database, c) -> list[str]:
    """The statements put_container runs for ``c`` (each once, in order)."""
    seen: list[str] = []
    db.conn.set_trace_callback(lambda s: None if s in seen else seen.append(s))
    try:
        assert db.put_container(c, received_at_ms=T0)
    finally:
        db.conn.set_trace_callback(None)
    return [s for s in seen if not s.lstrip().startswith("--") and s.split()[0].upper() not in ("BEGIN", "COMMIT")]


def plan(db: Database, sql: str) -> list[str]:
    return [row[3] for row in db.conn.execute("EXPLAIN QUERY PLAN " + sql)]


def test_storing_a_note_reads_notes_only_by_container_did(db, key):
    old = fill(db, key, 30)
    statements = traced(db, make_note(key, "corrected", now_ms=T0 + 100, replaces=[old[3].did]))
    hide = [s for s in statements if s.startswith("UPDATE notes SET hidden = 1")]
    assert len(hide) == 1 and len(statements) >= 5, statements
    for sql in statements:
        for line in plan(db, sql):
            assert not re.match(rf"SCAN ({'|'.join(GROWING)})\b", line), (sql, line)
            if re.match(r"(SEARCH|SCAN) notes\b", line):  # by the note's own key, never by its author
                assert "INDEX notes_by_container (container_did=?)" in line, (sql, line)
    assert plan(db, hide[0])[0] == "SEARCH notes USING INDEX notes_by_container (container_did=?)"
    hidden = db.conn.execute("SELECT container_did FROM notes WHERE hidden = 1").fetchall()
    assert hidden == [(old[3].did,)]  # the rewritten statement still hides what the note replaces


def vm_steps(db: Database, c) -> int:
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    db.conn.set_progress_handler(count, 1)
    try:
        assert db.put_container(c, received_at_ms=T0)
    finally:
        db.conn.set_progress_handler(None, 1)
    return steps


def test_the_work_of_one_insert_does_not_grow_with_the_authors_notes(db, key):
    old = fill(db, key, 20)
    small = vm_steps(db, make_note(key, "edit a", now_ms=T0 + 10_000, replaces=[old[0].did]))
    fill(db, key, 600, start=20)
    large = vm_steps(db, make_note(key, "edit b", now_ms=T0 + 10_001, replaces=[old[1].did]))
    assert small > 0
    assert large < small * 1.25, (small, large)  # 30x the notes; walking them all costs several times more
