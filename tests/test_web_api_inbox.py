"""The inbox over HTTP and at the CLI (meshnode/faces/web/api_inbox.py, meshnode/faces/cli/inbox.py):
what the agent asked and what the validators held, listed with their decisions, counted, decided in
place ("web" recorded as the decider), the same list from ``meshnode inbox --json``; refusals of what
does not fit; and the feed's ``inbox`` event when the inbox changes."""

from __future__ import annotations

import json
import time
from types import SimpleNamespace

import pytest

from meshnode.faces.cli.parsers import inbox as inbox_parsers
from meshnode.faces.web import feed_sources as fs
from meshnode.records import inbox as records
from meshnode.records.gate import confirm
from meshnode.records.mind import held
from meshnode.store import Database
from webharness import refused, web_node


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with web_node(tmp_path_factory.mktemp("inbox")) as node:
        (node.home / "workspace").mkdir(exist_ok=True)
        yield node



def _now() -> int:
    return time.time_ns() // 1_000_000


def ask(web, text: str) -> int:
    return web.on_db(lambda db: confirm.request(db, "core", "send_message", {"to": "did:key:zUnknown", "text": text},
                                                 "outbound", "a stranger", _now()))["id"]


def hold(web) -> int:
    command = SimpleNamespace(cmd_id="c1", type="note_add", args={"text": "held words", "audience": "public"},
                              description="", target_llm=None, mutating=True)

    def write(db):
        with db.transaction() as conn:
            return held.hold(conn, 3, [command], "no_verdict", "no validator answered", _now())[0]
    return web.on_db(write)


def test_listed_counted_and_decided_in_place(web):
    asked, held_id = ask(web, "hello stranger"), hold(web)
    listed = web.get("/api/inbox")
    ids = [i["id"] for i in listed["items"]]
    assert ids[:2] == [f"held_command:{held_id}", f"confirmation:{asked}"]
    assert listed["count"] == web.get("/api/inbox/count")
    before = listed["count"]["total"]
    out = web.post("/api/inbox/decide", {"kind": "confirmation", "ref": str(asked), "decision": "reject"})
    assert out["result"]["status"] == "rejected" and out["result"]["decided_by"] == "web"
    assert out["count"]["total"] == before - 1 == web.get("/api/inbox/count")["total"]
    status = web.on_db(lambda db: db.conn.execute("SELECT status, decided_by FROM gate_confirmations WHERE id = ?",
                                                   (asked,)).fetchone())
    assert status == ("rejected", "web")
    cli = web.cli_json("inbox")
    assert [i["id"] for i in cli["items"]] == [i["id"] for i in web.get("/api/inbox")["items"]]
    assert f"held_command:{held_id}" in [i["id"] for i in cli["items"]]
    web.node.cli("inbox", "decide", "held_command", str(held_id), "drop")
    assert f"held_command:{held_id}" not in [i["id"] for i in web.get("/api/inbox")["items"]]
    assert web.on_db(lambda db: db.conn.execute("SELECT decided_by FROM held_commands WHERE id = ?",
                                                 (held_id,)).fetchone()) == ("cli",)


def test_what_does_not_fit_is_refused_and_changes_nothing(web):
    asked = ask(web, "still waiting")
    count = web.get("/api/inbox/count")
    refused(web.raw_post("/api/inbox/decide", {"kind": "nonsense", "ref": "1", "decision": "approve"}), 400,
            "bad_arguments")
    refused(web.raw_post("/api/inbox/decide", {"kind": "confirmation", "ref": str(asked), "decision": "drop"}), 400,
            "bad_arguments")
    refused(web.raw_post("/api/inbox/decide", {"kind": "confirmation", "ref": "x" * 5000, "decision": "approve"}),
            400, "bad_arguments")
    refused(web.raw_get("/api/inbox", thread="not a thread"), 400, "bad_thread")
    assert web.client(bearer=False).get("/api/inbox").status_code == 401
    assert web.get("/api/inbox/count") == count


def test_an_inbox_event_when_the_inbox_changes_and_none_otherwise(tmp_path):
    db = Database(tmp_path / "feed.db")
    try:
        marks = fs.heads(db)
        with db.transaction() as conn:
            conn.execute("INSERT INTO notes (text, topic, source) VALUES ('just a note', 't', 'cli')")
        quiet = fs.poll(db, marks)
        assert [k for _, k, _ in quiet["events"]] == ["note"]
        confirm.request(db, "core", "note_add", {"text": "x"}, "outbound", "why", 1000)
        got = fs.poll(db, quiet["marks"])
        assert [(s, k) for s, k, _ in got["events"]] == [("confirm", "confirm"), ("inbox", "inbox")]
        assert got["events"][-1][2] == {"changed": ["confirm"]}
        with db.transaction() as conn:
            conn.execute("INSERT INTO notes (text, topic, source) VALUES ('esc', ?, 'system')",
                         (records.ESCALATION_TOPIC,))
        assert fs.poll(db, got["marks"])["events"][-1][1] == "inbox"
    finally:
        db.close()


def test_the_cli_knows_the_kinds_the_inbox_has():
    assert inbox_parsers.KINDS == records.KINDS
    assert fs.ESCALATION_TOPIC == records.ESCALATION_TOPIC
    assert json.dumps(records.ACTIONS)  # the decisions travel as JSON
