"""meshnode.store: migrations, containers and their table views, the trio facade, durability."""

from __future__ import annotations

import json
import queue
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import trio

from meshnode.base.container import build_container, now_ms
from meshnode.base.errors import StoreError
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.notes import make_note
from meshnode.store import Database, Store, latest_version
from meshnode.store import migrate as migrate_module

T0 = 1_760_000_000_000  # a fixed "now" (2025-10-09) so containers are reproducible


@pytest.fixture(scope="module")
def key() -> NodeKey:
    return NodeKey(bytes(range(1, 33)))


@pytest.fixture
def db_file(tmp_path) -> Path:
    return tmp_path / "data" / "node.db"


@pytest.fixture
def db(db_file):
    d = Database(db_file)
    try:
        yield d
    finally:
        d.close()


def note(key, text: str, t: int = T0, **kw):
    return make_note(key, text, now_ms=t, **kw)


# --- migrations -----------------------------------------------------------------


def test_fresh_database_migrated_to_latest(db, db_file):
    assert latest_version() >= 2
    assert db.version == latest_version()
    assert db.conn.execute("PRAGMA user_version").fetchone()[0] == latest_version()
    tables = {r[0] for r in db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"containers", "container_links", "notes", "identity", "main_process"} <= tables
    assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert db.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert db.conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert db_file.is_file()


def test_reopen_does_not_rerun_migrations(db_file, key, monkeypatch):
    first = Database(db_file)
    c = note(key, "survives a reopen")
    assert first.put_container(c, received_at_ms=T0)
    first.conn.execute("CREATE TABLE canary (x)")
    first.close()

    applied = []
    real_executescript = sqlite3.Connection.executescript

    class Spy(sqlite3.Connection):
        def executescript(self, sql):
            applied.append(sql)
            return real_executescript(self, sql)

    real_connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **kw: real_connect(*a, factory=Spy, **kw))
    again = Database(db_file)
    try:
        assert applied == []
        assert again.version == latest_version()
        assert again.conn.execute("SELECT count(*) FROM canary").fetchone()[0] == 0
        assert again.get_container_bytes(c.did) == c.to_bytes()
        assert again.counts()["notes"] == 1
    finally:
        again.close()


def test_migrates_an_older_database_forward(db_file):
    steps = migrate_module.migrations()
    db_file.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_file, isolation_level=None)
    conn.executescript(f"BEGIN;\n{steps[0][2]}\n;PRAGMA user_version = 1;\nCOMMIT;")
    conn.execute("INSERT INTO notes (text) VALUES ('written at version 1')")
    conn.close()
    d = Database(db_file)
    try:
        assert d.version == latest_version()
        assert d.conn.execute("SELECT text, audience, container_did FROM notes").fetchall() == [
            ("written at version 1", "private", None)]
    finally:
        d.close()


def test_database_too_new_refused(db_file):
    Database(db_file).close()
    conn = sqlite3.connect(db_file)
    conn.execute(f"PRAGMA user_version = {latest_version() + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError) as info:
        Database(db_file)
    assert info.value.code == "db_too_new"
    assert str(latest_version() + 1) in info.value.reason
    conn = sqlite3.connect(db_file)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == latest_version() + 1  # never downgraded
    conn.close()


def test_failed_migration_leaves_database_as_it_was(db_file, monkeypatch):
    Database(db_file).close()
    real = migrate_module.migrations
    broken = (latest_version() + 1, "9999_broken.sql",
              "CREATE TABLE half_done (x);\nINSERT INTO no_such_table VALUES (1);")
    monkeypatch.setattr(migrate_module, "migrations", lambda: real() + [broken])
    with pytest.raises(StoreError) as info:
        Database(db_file)
    assert info.value.code == "migration_failed"
    monkeypatch.undo()
    conn = sqlite3.connect(db_file)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == latest_version()
        assert conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'half_done'").fetchone()[0] == 0
    finally:
        conn.close()


def test_missing_database_with_create_false(tmp_path):
    with pytest.raises(StoreError) as info:
        Database(tmp_path / "nope.db", create=False)
    assert info.value.code == "no_database"
    assert not (tmp_path / "nope.db").exists()


# --- containers -------------------------------------------------------------------


def test_put_container_dedupes_by_did(db, key):
    c = note(key, "once only #dedupe")
    assert db.put_container(c, received_at_ms=T0) is True
    assert db.put_container(c, received_at_ms=T0 + 5, received_from="did:key:z6Mkother") is False
    assert db.conn.execute("SELECT count(*) FROM containers").fetchone()[0] == 1
    assert db.conn.execute("SELECT count(*) FROM notes").fetchone()[0] == 1
    row = db.conn.execute("SELECT received_at_ms, received_from, class, sender_did, timestamp_ms, known_class"
                          " FROM containers WHERE did = ?", (c.did,)).fetchone()
    assert row == (T0, None, "note", key.did, T0, 1)
    assert db.counts() == {"containers": 1, "notes": 1, "class:note": 1}


def test_round_trip(db, key):
    c = note(key, "round trip @bob #x", topic="rt", audience="public", priority=5)
    db.put_container(c, received_at_ms=T0)
    assert db.get_container_bytes(c.did) == c.to_bytes()
    assert db.get_container_bytes(c.did, with_side=False) == c.core_bytes()
    loaded = db.load_container(c.did, now_ms=now_ms())
    assert loaded == c
    assert loaded.did == c.did
    assert loaded.payload == c.payload
    assert loaded.sender_did == key.did
    assert db.get_container_bytes("did:hmp:container:bmissing") is None
    assert db.load_container("did:hmp:container:bmissing", now_ms=now_ms()) is None


def test_round_trip_with_side_block(db, key):
    c = build_container(key, "note", {"text": "with side", "source": "cli", "audience": "private"},
                        timestamp_ms=T0, side={"relay_chain": [{"peer": "did:key:z6Mkrelay"}]})
    db.put_container(c, received_at_ms=T0)
    assert db.get_container_bytes(c.did) == c.to_bytes()
    assert db.get_container_bytes(c.did, with_side=False) == c.core_bytes()
    assert db.load_container(c.did, now_ms=now_ms()) == c


def test_container_links(db, key):
    first = note(key, "the original")
    second = note(key, "another")
    reply = build_container(key, "note", {"text": "a reply", "source": "cli", "audience": "private"},
                            timestamp_ms=T0 + 1,
                            related={"in_reply_to": [first.did], "see_also": [first.did, second.did]})
    for c in (first, second, reply):
        assert db.put_container(c, received_at_ms=T0)
    rows = db.conn.execute("SELECT source_did, relation, target_did FROM container_links"
                           " ORDER BY relation, target_did").fetchall()
    assert sorted(rows) == sorted([
        (reply.did, "in_reply_to", first.did),
        (reply.did, "see_also", first.did),
        (reply.did, "see_also", second.did),
    ])
    # "who points at X"
    pointing = db.conn.execute("SELECT source_did, relation FROM container_links WHERE target_did = ?"
                               " ORDER BY relation", (first.did,)).fetchall()
    assert pointing == [(reply.did, "in_reply_to"), (reply.did, "see_also")]
    # a duplicate put adds no links
    assert db.put_container(reply, received_at_ms=T0) is False
    assert db.conn.execute("SELECT count(*) FROM container_links").fetchone()[0] == 3


def test_unknown_class_stored_without_view(db, key):
    c = build_container(key, "someone_elses_class", {"anything": [1, 2]}, timestamp_ms=T0)
    assert not c.known_class
    assert db.put_container(c, received_at_ms=T0)
    assert db.counts() == {"containers": 1, "notes": 0, "class:someone_elses_class": 1}
    assert db.get_container_bytes(c.did) == c.to_bytes()


# --- views ---------------------------------------------------------------------------

VIEW_COLUMNS = ("container_did", "topic", "text", "code", "mentions", "hashtags", "agent_did", "source",
                "priority", "timestamp", "audience", "user_did")


def view_rows(db) -> list[tuple]:
    return db.conn.execute(f"SELECT {', '.join(VIEW_COLUMNS)} FROM notes ORDER BY container_did").fetchall()


def test_note_row_from_container(db, key):
    c = note(key, "hi @alice and @did:key:z6MkabcDEF #One #two #one", topic="greet", audience="friends",
             priority=-3, source="llm", recipients=["did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"])
    db.put_container(c, received_at_ms=T0, local={"tags": ["mine"]})
    row = db.conn.execute("SELECT topic, text, mentions, hashtags, agent_did, source, priority, audience, tags,"
                          " read, hidden FROM notes WHERE container_did = ?", (c.did,)).fetchone()
    topic, text, mentions, hashtags, agent_did, source, priority, audience, tags, read, hidden = row
    assert (topic, text, agent_did, source, priority, audience) == (
        "greet", c.payload["text"], key.did, "llm", -3, "friends")
    assert json.loads(mentions) == ["alice", "did:key:z6MkabcDEF"]
    assert json.loads(hashtags) == ["one", "two"]
    assert json.loads(tags) == ["mine"]
    assert (read, hidden) == (0, 0)


def test_rebuild_views_recreates_deleted_rows(db, key):
    notes = [note(key, f"note {i} #n{i} @p{i}", t=T0 + i, topic=f"t{i}" if i % 2 else None) for i in range(5)]
    other = build_container(key, "unknown_thing", {"x": 1}, timestamp_ms=T0)
    for c in notes + [other]:
        db.put_container(c, received_at_ms=T0)
    before = view_rows(db)
    assert len(before) == 5

    with db.transaction() as conn:
        conn.execute("DELETE FROM notes")
    assert view_rows(db) == []

    assert db.rebuild_views() == 5  # the unknown class has no view
    assert view_rows(db) == before


def test_rebuild_views_keeps_local_columns(db, key):
    c = note(key, "read me later")
    db.put_container(c, received_at_ms=T0, local={"tags": ["todo"]})
    with db.transaction() as conn:
        conn.execute("UPDATE notes SET read = 1, hidden = 1, text = 'tampered' WHERE container_did = ?", (c.did,))
    (row_id,) = db.conn.execute("SELECT id FROM notes").fetchone()

    assert db.rebuild_views() == 1
    rows = db.conn.execute("SELECT id, text, read, hidden, tags FROM notes").fetchall()
    # the signed fields come back from the container; local columns are left alone
    assert rows == [(row_id, "read me later", 1, 1, json.dumps(["todo"]))]


def test_rebuild_views_is_idempotent(db, key):
    for i in range(3):
        db.put_container(note(key, f"n{i}", t=T0 + i), received_at_ms=T0)
    before = view_rows(db)
    db.rebuild_views()
    db.rebuild_views()
    assert view_rows(db) == before
    assert db.counts()["notes"] == 3


# --- the trio facade ---------------------------------------------------------------------


def _put(d: Database, c) -> bool:
    return d.put_container(c, received_at_ms=T0)


def _dids(d: Database) -> set[str]:
    return {r[0] for r in d.conn.execute("SELECT did FROM containers")}


async def test_store_open_write_read_close(db_file, key):
    store = await Store.open(db_file)
    try:
        assert store.version == latest_version()
        assert store.path == db_file
        c = note(key, "through the facade")
        assert await store.write(_put, c) is True
        assert await store.write(_put, c) is False
        assert await store.read(lambda d, did: d.get_container_bytes(did), c.did) == c.to_bytes()
        assert await store.read(lambda d: d.counts()) == {"containers": 1, "notes": 1, "class:note": 1}
    finally:
        await store.aclose()
    with pytest.raises(sqlite3.ProgrammingError):
        store._writer.conn.execute("SELECT 1")

    reopened = Database(db_file, create=False)
    try:
        assert reopened.get_container_bytes(c.did) == c.to_bytes()
    finally:
        reopened.close()


async def test_store_as_context_manager(db_file, key):
    c = note(key, "ctx")
    async with await Store.open(db_file) as store:
        await store.write(_put, c)
    again = await Store.open(db_file, create=False)
    async with again:
        assert await again.read(_dids) == {c.did}


async def test_store_open_missing_without_create(tmp_path):
    with pytest.raises(StoreError) as info:
        await Store.open(tmp_path / "none.db", create=False)
    assert info.value.code == "no_database"


async def test_concurrent_writes_all_land(db_file, key):
    containers = [note(key, f"concurrent {i}", t=T0 + i) for i in range(60)]
    results: list[tuple[str, bool]] = []
    async with await Store.open(db_file) as store:
        async def writer(c):
            results.append((c.did, await store.write(_put, c)))

        async with trio.open_nursery() as nursery:
            for c in containers:
                nursery.start_soon(writer, c)
            for c in containers[:10]:  # duplicates racing with the originals
                nursery.start_soon(writer, c)
        assert len(results) == 70
        # every container was inserted exactly once, whichever copy won the race
        inserted = sorted(did for did, new in results if new)
        assert inserted == sorted(c.did for c in containers)
        assert await store.read(_dids) == {c.did for c in containers}
        assert await store.read(lambda d: d.counts()) == {"containers": 60, "notes": 60, "class:note": 60}


async def test_reader_sees_committed_writes_while_writing(db_file, key):
    async with await Store.open(db_file) as store:
        seen: list[int] = []

        async def write_all():
            for i in range(30):
                await store.write(_put, note(key, f"w{i}", t=T0 + i))

        async def read_some():
            for _ in range(30):
                seen.append(len(await store.read(_dids)))
                await trio.sleep(0)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(write_all)
            nursery.start_soon(read_some)
        assert seen == sorted(seen)  # a reader never sees the count go backwards
        assert len(await store.read(_dids)) == 30


async def test_cancelled_write_still_commits(db_file, key):
    """A write that has started finishes (and commits) even if its caller is cancelled."""
    c = note(key, "cancelled caller")
    started, proceed = threading.Event(), threading.Event()
    outcome: list[str] = []

    def slow_put(d: Database) -> bool:
        started.set()
        assert proceed.wait(timeout=10)
        return _put(d, c)

    async with await Store.open(db_file) as store:
        async def caller(scope_box):
            with trio.CancelScope() as scope:
                scope_box.append(scope)
                await store.write(slow_put)
                outcome.append("returned")
                return
            outcome.append("cancelled")

        box: list[trio.CancelScope] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(caller, box)
            with trio.fail_after(10):
                await trio.to_thread.run_sync(started.wait)
            box[0].cancel()
            await trio.sleep(0)
            assert outcome == []  # still waiting for the started write
            proceed.set()
        # the caller may see the result or the cancellation, but only after the commit
        assert outcome in (["returned"], ["cancelled"])
        assert await store.read(_dids) == {c.did}
        assert (await store.read(lambda d: d.counts()))["notes"] == 1


# --- durability: acknowledged writes survive kill -9 ---------------------------------------

CHILD = textwrap.dedent("""
    import sys
    from meshnode.base.identity.keys import NodeKey
    from meshnode.domain.notes import make_note
    from meshnode.records.gmp import store_hooks
    from meshnode.store import Database

    store_hooks.install()
    db = Database(sys.argv[1])
    key = NodeKey(bytes(range(1, 33)))
    print("open", flush=True)
    i = 0
    while True:
        c = make_note(key, f"durable note {i} #n{i % 7}", now_ms=1_760_000_000_000 + i)
        db.put_container(c, received_at_ms=1_760_000_000_000 + i)
        sys.stdout.write(c.did + "\\n")  # the acknowledgement, only after the commit returned
        sys.stdout.flush()
        i += 1
""")


def test_acknowledged_writes_survive_sigkill(tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(CHILD, encoding="utf-8")
    db_file = tmp_path / "durable.db"
    proc = subprocess.Popen([sys.executable, str(script), str(db_file)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str | None] = queue.Queue()

    def pump():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    acked: list[str] = []
    try:
        deadline = time.monotonic() + 30
        while len(acked) < 200:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"only {len(acked)} acknowledgements in 30 s"
            try:
                line = lines.get(timeout=remaining)
            except queue.Empty:
                continue
            assert line is not None, f"the writer died: {proc.stderr.read()}"
            if line.endswith("\n") and line.startswith("did:hmp:container:"):
                acked.append(line.strip())
        assert proc.poll() is None, "the writer must still be writing when it is killed"
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
        # acknowledgements already in the pipe count too (complete lines only)
        reader.join(timeout=10)
        while True:
            line = lines.get_nowait() if not lines.empty() else None
            if line is None:
                break
            if line.endswith("\n") and line.startswith("did:hmp:container:"):
                acked.append(line.strip())
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()

    assert len(acked) >= 200 and len(set(acked)) == len(acked)
    d = Database(db_file, create=False)
    try:
        assert d.conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        stored = {r[0] for r in d.conn.execute("SELECT did FROM containers")}
        in_notes = {r[0] for r in d.conn.execute("SELECT container_did FROM notes")}
        missing = [did for did in acked if did not in stored]
        assert not missing, f"{len(missing)} acknowledged containers lost, e.g. {missing[:3]}"
        missing_notes = [did for did in acked if did not in in_notes]
        assert not missing_notes, f"{len(missing_notes)} acknowledged notes lost"
        assert in_notes == stored  # container and view were committed together
        assert d.conn.execute("PRAGMA foreign_key_check").fetchall() == []
        # the stored bytes still verify
        assert d.load_container(acked[-1], now_ms=now_ms()).did == acked[-1]
    finally:
        d.close()


# --- review regressions -------------------------------------------------------------


def test_a_failed_commit_rolls_back_and_leaves_the_connection_usable(tmp_path):
    from meshnode.base.errors import StoreError

    db = Database(tmp_path / "x.db")
    try:
        with pytest.raises(StoreError) as info:
            with db.transaction() as conn:
                conn.execute("PRAGMA defer_foreign_keys=ON")  # the violation surfaces at COMMIT
                conn.execute("INSERT INTO container_links (source_did, relation, target_did) VALUES ('x', 'r', 't')")
        assert "FOREIGN KEY" in info.value.reason
        assert not db.conn.in_transaction
        with db.transaction() as conn:
            conn.execute("SELECT 1")
    finally:
        db.close()


def test_the_first_error_is_the_one_raised_when_sqlite_already_rolled_back(tmp_path):
    from meshnode.base.errors import StoreError

    db = Database(tmp_path / "x.db")
    try:
        db.conn.execute("CREATE TEMP TABLE t (x)")
        db.conn.execute("CREATE TEMP TRIGGER tr BEFORE INSERT ON t BEGIN SELECT RAISE(ROLLBACK, 'says no'); END")
        with pytest.raises(StoreError) as info:
            with db.transaction() as conn:
                conn.execute("INSERT INTO t VALUES (1)")
        assert "says no" in info.value.reason
    finally:
        db.close()


OPENER = """
import sys
from pathlib import Path
from meshnode.records.gmp import store_hooks
from meshnode.store import Database
store_hooks.install()
db = Database(Path(sys.argv[1]))
print(db.version)
db.close()
"""


def test_processes_opening_a_new_database_at_once_all_succeed(tmp_path):
    from meshnode.store import latest_version

    script = tmp_path / "opener.py"
    script.write_text(OPENER)
    for trial in range(5):
        path = tmp_path / f"new{trial}.db"
        procs = [subprocess.Popen([sys.executable, str(script), str(path)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(3)]
        for p in procs:
            out, err = p.communicate(timeout=60)
            assert p.returncode == 0, err
            assert out.strip() == str(latest_version())
