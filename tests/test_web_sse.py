"""The event feed: the cursor, the tailed sources (against a real database), and over HTTP the stream
itself (resume with Last-Event-ID, the stream limit, a CLI write in another process as an event)."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from types import SimpleNamespace

import httpx
import pytest
import trio
import trio.testing

from meshnode.base.metrics import Metrics
from meshnode.store import Store
from meshnode.store.database import Database
from meshnode.faces.web import feed_sources as fs
from meshnode.faces.web.sse import BUFFER, Feed
from webharness import web_node


@pytest.fixture
def db(tmp_path):
    d = Database(tmp_path / "feed.db")
    yield d
    d.close()


def _log(db, name: str, value: dict) -> int:
    with db.transaction() as conn:
        return conn.execute("INSERT INTO process_log (name, value) VALUES (?, ?)", (name, json.dumps(value))).lastrowid


def _note(db, text: str, topic: str | None = None, source: str = "cli") -> int:
    with db.transaction() as conn:
        return conn.execute("INSERT INTO notes (text, topic, source) VALUES (?, ?, ?)", (text, topic, source)).lastrowid


def _held(db, now: int) -> int:
    with db.transaction() as conn:
        return conn.execute("INSERT INTO held_commands (tick, cmd_id, type, command, kind, reason, created_ms)"
                            " VALUES (1, 'c1', 'note_add', '{}', 'rejected', 'why', ?)", (now,)).lastrowid


# --- the cursor ------------------------------------------------------------------------------------

def test_cursor_round_trip_and_is_compact(db):
    marks = fs.heads(db)
    marks["log"], marks["held"] = (12, None), (3, 1733090000000)
    text = fs.encode(marks)
    assert text.startswith("log=12,note=0,held=3:1733090000000,") and " " not in text
    assert fs.decode(text) == marks


@pytest.mark.parametrize("bad", ["", "log=1", "log=x," * 3, "nope=1", "log=1:5,note=0",
                                 "log=1,log=2", "a" * 500, "log=-1"])
def test_cursor_refuses_what_it_cannot_follow(db, bad):
    assert fs.decode(bad) is None


def test_a_cursor_ahead_of_the_database_is_detected(db):
    heads = fs.heads(db)
    assert not fs.ahead(heads, heads)
    assert fs.ahead({**heads, "note": (heads["note"][0] + 1, None)}, heads)


# --- the sources -----------------------------------------------------------------------------------

def test_poll_returns_new_rows_once_as_typed_events(db):
    marks = fs.heads(db)
    _log(db, "tick", {"tick": 7, "mode": "normal"})
    _log(db, "cmd:c1", {"cmd_id": "c1", "type": "note_add", "status": "ok"})
    _log(db, "prune", {})                      # not an event, but the mark moves past it
    _log(db, "gate:accept", {"accepted": [1]})
    _note(db, "hello", "t")
    _note(db, "hi agent", "chat:abcdefghijklmnop", source="user")
    got = fs.poll(db, marks)
    kinds = [(src, kind) for src, kind, _ in got["events"]]
    assert kinds == [("log", "tick"), ("log", "command"), ("log", "gate"),
                     ("note", "note"), ("note", "note"), ("note", "chat")]
    data = {kind: d for _, kind, d in got["events"]}
    assert data["tick"]["tick"] == 7 and data["tick"]["summary"]["mode"] == "normal"
    assert data["command"]["id"] == "c1" and data["command"]["status"] == "ok"
    assert data["chat"] == {"thread": "abcdefghijklmnop", "did": None, "side": "person", "text": "hi agent"}
    assert got["more"] == [] and got["marks"] == fs.heads(db)
    assert fs.poll(db, got["marks"])["events"] == []


def test_rows_changed_in_place_come_again_by_their_time(db):
    hid = _held(db, 1000)
    marks = fs.heads(db)
    assert fs.poll(db, marks)["events"] == []
    with db.transaction() as conn:
        conn.execute("UPDATE held_commands SET status = 'dropped', decided_ms = 5000 WHERE id = ?", (hid,))
    got = fs.poll(db, marks)
    assert [(k, d["id"], d["status"]) for _, k, d in got["events"] if k != "inbox"] == [("held", hid, "dropped")]
    assert got["events"][-1][1:] == ("inbox", {"changed": ["held"]})  # the inbox changed: one event of its own
    assert got["marks"]["held"] == (hid, 5000)
    assert fs.poll(db, got["marks"])["events"] == []
    # a row that is new and already decided is reported once, not again as changed
    hid2 = _held(db, 6000)
    with db.transaction() as conn:
        conn.execute("UPDATE held_commands SET status = 'released', decided_ms = 7000 WHERE id = ?", (hid2,))
    again = fs.poll(db, got["marks"])
    assert [(d["id"], d["status"]) for _, k, d in again["events"] if k != "inbox"] == [(hid2, "released")]
    assert fs.poll(db, again["marks"])["events"] == []


def test_the_limit_leaves_rows_for_the_next_poll_without_losing_one(db):
    marks = fs.heads(db)
    ids = [_note(db, f"n{i}") for i in range(7)]
    seen = []
    for _ in range(5):
        got = fs.poll(db, marks, limit=3)
        seen += [d["id"] for _, _, d in got["events"]]
        marks = got["marks"]
        if not got["more"]:
            break
    assert seen == ids


def test_resume_up_to_the_feeds_marks_and_the_resync_limit(db):
    start = fs.heads(db)
    for i in range(5):
        _note(db, f"n{i}")
    upto = fs.heads(db)
    _note(db, "after the feed's marks")            # the live poll's, not the catch-up's
    missed = fs.poll(db, start, upto, limit=fs.RESUME_LIMIT + 1)
    assert len(missed["events"]) == 5 and missed["marks"]["note"] == upto["note"]
    assert fs.poll(db, start, upto, limit=3)["more"] == ["note"]   # too many: the stream resyncs


def test_goals_and_tasks_are_tailed_by_container_rowid_past_other_classes(db, tmp_path):
    marks = fs.heads(db)
    with db.transaction() as conn:
        for n, cls in enumerate(["note", "goal", "note", "task"]):
            conn.execute("INSERT INTO containers (did, class, class_version, sender_did, timestamp_ms, known_class,"
                         " core, received_at_ms) VALUES (?, ?, '1', 'did:x', 1, 1, x'00', 1)", (f"did:c{n}", cls))
    got = fs.poll(db, marks)
    assert [(k, d["id"]) for _, k, d in got["events"]] == [("goal", "did:c1"), ("task", "did:c3")]
    assert got["marks"]["gmp"][0] == fs.heads(db)["gmp"][0]


def test_a_threads_first_message_is_named_by_its_own_did(db):
    marks = fs.heads(db)
    did = "did:hmp:container:uEi" + "A" * 16 + "rest"
    with db.transaction() as conn:
        conn.execute("INSERT INTO containers (did, class, class_version, sender_did, timestamp_ms, known_class,"
                     " core, received_at_ms) VALUES (?, 'note', '1', 'did:x', 1, 1, x'00', 1)", (did,))
        conn.execute("INSERT INTO notes (text, topic, source, container_did) VALUES ('hi', 'chat', 'user', ?)", (did,))
    _note(db, "a reply", "chat:" + "B" * 16, source="llm")
    _note(db, "no DID", "chat")  # a note from before containers names no thread
    _note(db, "talk", "chatter")
    chats = [data for _, kind, data in fs.poll(db, marks)["events"] if kind == "chat"]
    assert [(c["thread"], c["side"]) for c in chats] == [("A" * 16, "person"), ("B" * 16, "agent")]


def test_mode_and_peer_diffs():
    data, state = fs.mode_event({"mode": "normal", "idle": False, "ticks": 1}, None)
    assert data["mode"] == "normal" and data["ticks"] == 1
    assert fs.mode_event({"mode": "normal", "idle": False, "ticks": 2}, state)[0] is None  # a tick is no mode change
    assert fs.mode_event({"mode": "normal", "idle": True, "ticks": 2}, state)[0]["idle"] is True
    assert fs.peer_events({"a"}, None) == []
    assert fs.peer_events({"a", "b"}, {"a", "c"}) == [{"did": "b", "connected": True}, {"did": "c", "connected": False}]


# --- the Feed itself, on a real store (no server) ------------------------------------------------


def _services(store):
    return SimpleNamespace(config=None, metrics=Metrics(), cycle=None, mesh=None, read=store.read)


async def test_the_feed_reads_nothing_while_no_stream_is_open_and_wakes_when_nudged(tmp_path):
    async with await Store.open(tmp_path / "f.db") as store:
        feed = Feed(_services(store))
        feed.feed_s = 30.0   # only a nudge makes it look
        async with trio.open_nursery() as nursery:
            await nursery.start(feed.run)
            feed.nudge()
            await trio.testing.wait_all_tasks_blocked()
            assert feed.polls == 0
            stream = await feed.open(frozenset({"note"}), None)
            await store.write(_note, "seen at once")
            feed.nudge()
            with trio.fail_after(5):
                chunk = await stream.receive.receive()
            assert b"event: note" in chunk and b"seen at once" in chunk and b"\nid: " in chunk
            feed.close(stream)
            nursery.cancel_scope.cancel()
        assert feed.streams == 0


async def test_a_slow_client_is_closed_with_a_resync_and_never_blocks_the_feed(tmp_path):
    async with await Store.open(tmp_path / "f.db") as store:
        feed = Feed(_services(store))
        slow = await feed.open(frozenset({"note"}), None)
        other = await feed.open(frozenset({"tick"}), None)
        for i in range(BUFFER + 50):
            await store.write(_note, f"n{i}")
        with trio.fail_after(10):
            while await feed.poll_once():   # 200 rows a poll: two polls, neither waits on the client
                pass
        assert slow.lagged and other in feed._subs and slow not in feed._subs
        chunks = [c async for c in feed.frames(slow)]
        assert len(chunks) == 1 + BUFFER + 1 and chunks[-1].startswith(b"event: resync")
        assert feed.services.metrics.get("web_sse_dropped", reason="slow_client") == 1
        feed.close(slow)
        feed.close(other)
        assert feed.streams == 0


# --- over HTTP: a real node ------------------------------------------------------------------------


class SSE:
    """A test's event stream: ``next()`` is the next event as (type, id or None, data)."""

    def __init__(self, web, types: str | None = None, last_id: str | None = None):
        self.client = web.client(timeout=httpx.Timeout(10.0))
        headers = {"Last-Event-ID": last_id} if last_id else {}
        self._cm = self.client.stream("GET", "/api/events", params={"types": types} if types else {},
                                      headers=headers)
        self.response = self._cm.__enter__()
        self._lines = self.response.iter_lines() if self.response.status_code == 200 else iter(())

    def next(self) -> tuple[str, str | None, dict]:
        kind, eid, data = None, None, None
        for line in self._lines:
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("id: "):
                eid = line[4:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
            elif line == "" and kind is not None:
                return kind, eid, data
        raise AssertionError("the stream ended")

    def until(self, want, max_events: int = 100) -> list[tuple[str, str | None, dict]]:
        """Events up to and including the first for which ``want(event)`` holds."""
        seen = []
        for _ in range(max_events):
            seen.append(self.next())
            if want(seen[-1]):
                return seen
        raise AssertionError(f"not among {max_events} events: {seen[-5:]}")

    def close(self) -> None:
        self._cm.__exit__(None, None, None)
        self.client.close()


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with web_node(tmp_path_factory.mktemp("sse")) as w:
        yield w


def _last_id(events) -> str:
    ids = [e[1] for e in events if e[1]]
    assert ids, events
    return ids[-1]


def test_resume_with_last_event_id_loses_nothing(web):
    first = SSE(web, "note")
    web.node.call("note_add", {"text": "before the cut"})
    got = first.until(lambda e: e[2]["text"] == "before the cut")
    cursor = _last_id(got)
    first.close()
    for text in ("missed one", "missed two"):        # written while no stream is open
        web.node.call("note_add", {"text": text})
    resumed = SSE(web, "note", last_id=cursor)
    try:
        got = resumed.until(lambda e: e[2]["text"] == "missed two")
        assert [e[2]["text"] for e in got] == ["missed one", "missed two"]   # nothing lost, nothing twice
        web.node.call("note_add", {"text": "live again"})
        assert resumed.next()[2]["text"] == "live again"
    finally:
        resumed.close()


def test_a_cursor_from_elsewhere_gets_resync(web):
    s = SSE(web, "note", last_id="log=999999999,note=1")
    try:
        kind, eid, data = s.next()
        assert kind == "resync" and eid and "reason" in data
    finally:
        s.close()


def test_the_stream_after_max_streams_gets_503_and_a_closed_one_frees_its_slot(web):
    with contextlib.ExitStack() as stack:
        streams = []
        for _ in range(16):
            s = SSE(web, "mode")
            stack.callback(s.close)
            assert s.response.status_code == 200 and s.response.headers["content-type"].startswith("text/event-stream")
            streams.append(s)
        extra = SSE(web, "mode")
        stack.callback(extra.close)
        assert extra.response.status_code == 503
        extra.response.read()
        body = extra.response.json()
        assert body["ok"] is False and body["code"] == "too_many_streams" and body["reason"]
        assert extra.response.headers["retry-after"] == "10"  # the page says so and tries again then
        streams[0].close()
        deadline = time.monotonic() + 10
        while True:   # the server notices the closed connection, then the slot is free
            again = SSE(web, "mode")
            stack.callback(again.close)
            if again.response.status_code == 200 or time.monotonic() > deadline:
                break
        assert again.response.status_code == 200


def test_unknown_event_type_is_400(web):
    r = web.raw_get("/api/events", types="tick,nonsense")
    assert r.status_code == 400 and r.json()["code"] == "bad_arguments" and "nonsense" in r.json()["reason"]


def test_a_cli_write_in_another_process_shows_up_as_an_event(web):
    s = SSE(web, "note,draft,gate")
    try:
        web.node.cli("note", "add", "from a terminal")            # the control socket, another process
        s.until(lambda e: e[0] == "note" and e[2]["text"] == "from a terminal")
        now = int(time.time() * 1000)
        with contextlib.closing(sqlite3.connect(web.home / "data" / "meshnode.db")) as conn, conn:   # a drafting agent
            conn.execute("INSERT INTO gate_drafts (session, path, base_hash, content, created_ms, updated_ms)"
                         " VALUES ('core', 'notes/feed.txt', NULL, x'6869', ?, ?)", (now, now))
        s.until(lambda e: e[0] == "draft" and e[2]["status"] == "pending")
        assert "notes/feed.txt" in web.node.cli("drafts", "list")  # a person looks, then accepts:
        web.node.cli("drafts", "accept", "notes/feed.txt")          # the CLI writes the database directly
        s.until(lambda e: e[0] == "draft" and e[2]["status"] == "accepted")
    finally:
        s.close()


def test_rows_changed_in_one_millisecond_past_the_limit_are_not_lost(db):
    """A person releases many held commands at once: one decided_ms for all. A poll that hits its
    limit inside that millisecond must not move its time mark past the rows it did not read."""
    ids = [_held(db, 1000) for _ in range(7)]
    marks = fs.heads(db)
    with db.transaction() as conn:
        conn.execute("UPDATE held_commands SET status = 'released', decided_ms = 5000")
        conn.execute("UPDATE held_commands SET decided_ms = 4000 WHERE id = ?", (ids[0],))
    seen = set()
    for _ in range(10):
        got = fs.poll(db, marks, limit=3)
        seen |= {d["id"] for _, k, d in got["events"] if k == "held"}
        marks = got["marks"]
        if not got["more"]:
            break
    assert seen == set(ids)
    assert fs.poll(db, marks, limit=3)["events"] == []


async def test_a_browser_has_one_shared_stream_a_newer_one_ends_the_older(tmp_path):
    """A SharedWorker gone with its page may leave its request open; a few such fill the browser's six
    connections to the node and every navigation waits. The session's newer shared stream ends the
    older one with ``replaced``; a tab's own stream and another session's are left alone."""
    async with await Store.open(tmp_path / "f.db") as store:
        feed = Feed(_services(store))
        old = await feed.open(frozenset({"note"}), None, holder="session-a")
        own = await feed.open(frozenset({"note"}), None)  # a tab's own stream (no holder)
        other = await feed.open(frozenset({"note"}), None, holder="session-b")
        new = await feed.open(frozenset({"note"}), None, holder="session-a")
        assert old.replaced and old not in feed._subs and {own, other, new} <= feed._subs
        chunks = [c async for c in feed.frames(old)]  # it ends at once, saying why
        assert chunks[-1].startswith(b"event: replaced") and len(chunks) == 2
        assert feed.services.metrics.get("web_sse_replaced") == 1
        for s in (old, own, other, new):
            feed.close(s)
        assert feed.streams == 0


async def test_of_two_shared_streams_the_later_asked_for_stays_whatever_arrives_first(tmp_path):
    """A reopen (new types) may reach the node before the request it replaces: ``seq`` decides."""
    async with await Store.open(tmp_path / "f.db") as store:
        feed = Feed(_services(store))
        newer = await feed.open(frozenset({"note"}), None, holder="s", seq=200)
        late_older = await feed.open(frozenset({"note"}), None, holder="s", seq=100)
        assert late_older.replaced and not newer.replaced and newer in feed._subs and late_older not in feed._subs
        feed.close(newer)
        feed.close(late_older)
        assert feed.streams == 0
