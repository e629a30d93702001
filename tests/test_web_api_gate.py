"""The gate's review over HTTP (meshnode/faces/web/api_gate.py): drafts the agent made (written here with
the gate's own functions, in the node's workspace), listed, accepted, committed and rolled back;
every decision reaches the agent's context 4 as a CLI one does; confirmations answered by "web"."""

from __future__ import annotations

import json
import time

import pytest

from meshnode.engines.cognition import contexts
from meshnode.records.gate import confirm
from meshnode.records.gate.drafts import draft_write
from meshnode.engines.gate.gate import _record_submission
from meshnode.engines.gate.jail import Jail
from meshnode.engines.gate.tools import TOOLS
from meshnode.store import Database
from webharness import refused, web_node

SESSION = "core"  # the agent's drafting session, which the person reviews


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with web_node(tmp_path_factory.mktemp("gate")) as node:
        (node.home / "workspace").mkdir(exist_ok=True)
        yield node


def on_db(web, fn):
    """``fn(db, jail)`` on the node's database and workspace, as another process (the agent's gate,
    the CLI) would."""
    db = Database(web.home / "data" / "meshnode.db")
    try:
        return fn(db, Jail([(web.home / "workspace").resolve()]))
    finally:
        db.close()


def agent_drafts(web, files: dict[str, str]) -> None:
    def draft(db, jail):
        for path, text in files.items():
            draft_write(db, jail, SESSION, path, text.encode())
        _record_submission(db, SESSION, "files", "READY -- checked", True, sorted(files), time.time_ns() // 1_000_000)
    on_db(web, draft)


def gate_rows(web) -> list[tuple[str, object, list]]:
    return on_db(web, lambda db, _: [(n, json.loads(v), json.loads(t)) for n, v, t in db.conn.execute(
        "SELECT name, value, tags FROM process_log WHERE name LIKE 'gate:%' ORDER BY id")])


def context_4(web) -> str:
    """The agent's context 4 as its next tick would read it."""
    messages = on_db(web, lambda db, _: contexts.build(db, now_ms=time.time_ns() // 1_000_000, tick=1, recent_k=5,
                                                        mode="normal", llm_id="x"))
    text = messages[-1]["content"]
    start = text.index("Results of your last commands and processes (context 4)")
    return text[start:text.index("\n## ", start)]


def state(web) -> tuple:
    """What a refused request must leave as it was: drafts, snapshots, the log, the files."""
    rows = on_db(web, lambda db, _: (
        db.conn.execute("SELECT path, status, content, shown_sha256 FROM gate_drafts ORDER BY id").fetchall(),
        db.conn.execute("SELECT count(*) FROM gate_snapshots").fetchone(),
        db.conn.execute("SELECT max(id) FROM process_log").fetchone(),
        db.conn.execute("SELECT id, status FROM gate_confirmations ORDER BY id").fetchall()))
    files = {p.name: p.read_bytes() for p in sorted((web.home / "workspace").iterdir())}
    return rows, files


def test_review_accept_commit_rollback(web):
    (web.home / "workspace" / "notes.txt").write_text("old\n")
    agent_drafts(web, {"notes.txt": "new\n", "plan.txt": "step 1\n"})

    # never listed: an accept is refused whole, before anything is decided
    before = state(web)
    assert "notes.txt" in refused(web.raw_post("/api/drafts/decide", {"decision": "accept", "all": True}),
                                  409, "not_shown")
    assert state(web) == before

    listed = web.get("/api/drafts")
    assert listed["submission"]["summary"] == "files" and listed["rejected_hidden"] == 0
    by_path = {d["path"]: d for d in listed["drafts"]}
    assert set(by_path) == {"notes.txt", "plan.txt"} and "+new" in by_path["notes.txt"]["diff"]
    assert not by_path["notes.txt"]["conflict"] and by_path["notes.txt"]["status"] == "pending"

    assert web.post("/api/drafts/decide", {"decision": "reject", "paths": ["plan.txt"]})["decided"] == ["plan.txt"]
    accepted = web.post("/api/drafts/decide", {"decision": "accept", "all": True})
    assert accepted == {"decided": ["notes.txt"], "changed_since_listed": []}
    assert web.get("/api/drafts")["rejected_hidden"] == 1
    snap = web.post("/api/drafts/commit", {"message": "reviewed on the web"})["snapshot"]
    assert (web.home / "workspace" / "notes.txt").read_text() == "new\n"
    assert not (web.home / "workspace" / "plan.txt").exists()
    assert web.get("/api/drafts", rejected="true")["drafts"] == []  # the commit discarded the rejection

    shots = web.get("/api/snapshots")
    assert shots[0]["id"] == snap and shots[0]["reason"] == "reviewed on the web"
    assert [f["path"] for f in web.get(f"/api/snapshots/{snap}")["files"]] == ["notes.txt"]
    rolled = web.post(f"/api/snapshots/{snap}/rollback")
    assert rolled["restored"] == snap and rolled["before"] > snap
    assert (web.home / "workspace" / "notes.txt").read_text() == "old\n"

    rows = gate_rows(web)
    assert [(n, t) for n, _, t in rows] == [(name, ["gate", "person", "web"]) for name in
                                            ("gate:reject", "gate:accept", "gate:commit", f"gate:rollback of {snap}")]
    assert rows[1][1] == accepted and rows[2][1] == snap and rows[3][1] == rolled["before"]
    seen = context_4(web)
    for name, value, _ in rows:  # as the agent reads them, next tick
        assert f"{name} [ok] {json.dumps(value)}" in seen


def test_edit_then_accept_without_listing(web):
    agent_drafts(web, {"edited.txt": "agent's\n"})
    row = web.post("/api/drafts/edit", {"path": "edited.txt", "content": "the person's\n"})
    assert row["path"] == "edited.txt" and row["status"] == "pending"
    # the person wrote it, so it counts as shown
    assert web.post("/api/drafts/decide", {"decision": "accept", "paths": ["edited.txt"]})["decided"] == ["edited.txt"]
    web.post("/api/drafts/commit", {})
    assert (web.home / "workspace" / "edited.txt").read_text() == "the person's\n"
    assert [n for n, _, _ in gate_rows(web)][-3:] == ["gate:edit", "gate:accept", "gate:commit"]


def test_refusals_change_nothing(web):
    agent_drafts(web, {"later.txt": "x\n"})
    before = state(web)
    for path, body, status, code in [
            ("/api/drafts/decide", {"decision": "accept"}, 400, "bad_arguments"),  # neither paths nor all
            ("/api/drafts/decide", {"decision": "accept", "paths": ["later.txt"], "all": True}, 400, "bad_arguments"),
            ("/api/drafts/decide", {"decision": "maybe", "all": True}, 400, "bad_arguments"),
            ("/api/drafts/decide", {"decision": "accept", "paths": [3]}, 400, "bad_arguments"),
            ("/api/drafts/decide", {"decision": "reject", "paths": ["later.txt", "none.txt"]}, 404, "not_found"),
            ("/api/drafts/decide", {"decision": "accept", "paths": ["later.txt"]}, 409, "not_shown"),
            ("/api/drafts/edit", {"path": "none.txt", "content": "y"}, 404, "not_found"),
            ("/api/drafts/edit", {"path": "../outside.txt", "content": "y"}, 400, None),
            ("/api/drafts/commit", {"message": 7}, 400, "bad_arguments"),
            ("/api/snapshots/999/rollback", {}, 404, "not_found"),
            ("/api/snapshots/x1/rollback", {}, 400, "bad_arguments"),
            ("/api/confirmations/999", {"approve": True}, 404, "not_found"),
            ("/api/confirmations/1", {"approve": "yes"}, 400, "bad_arguments")]:
        response = web.raw_post(path, body)
        body_ = response.json()
        assert response.status_code == status and body_["ok"] is False and body_["reason"], (path, body, body_)
        assert code is None or body_["code"] == code, (path, body, body_)
    refused(web.raw_get("/api/snapshots/999"), 404, "not_found")
    assert state(web) == before


def test_confirmations_tools_and_limit(web):
    now = time.time_ns() // 1_000_000
    ask = lambda args: on_db(web, lambda db, _: confirm.request(db, SESSION, "delete_file", args, "destructive",
                                                                "deletes a file", now))  # noqa: E731
    first, second = ask({"path": "a.txt"}), ask({"path": "b.txt"})
    pending = web.get("/api/confirmations")
    assert {r["id"] for r in pending} >= {first["id"], second["id"]} and pending[0]["args"] == {"path": "b.txt"}
    for named in ({"by": "cli"}, {"decided_by": "agent"}, {"actor": "cli"}):  # who decides is the face's to say
        refused(web.raw_post(f"/api/confirmations/{first['id']}", {"approve": True, **named}), 400, "bad_arguments")
    refused(web.raw_post("/api/gate/reset-limit", {"by": "cli"}), 400, "bad_arguments")
    assert web.get("/api/confirmations")[-1]["status"] == "pending"
    approved = web.post(f"/api/confirmations/{first['id']}", {"approve": True})
    assert approved["status"] == "approved" and approved["decided_by"] == "web"
    assert web.post(f"/api/confirmations/{second['id']}", {"approve": False})["status"] == "rejected"
    assert web.get("/api/confirmations") == []
    assert {r["id"] for r in web.get("/api/confirmations", all="true")} >= {first["id"], second["id"]}
    before = state(web)
    refused(web.raw_post(f"/api/confirmations/{first['id']}", {"approve": False}), 409, "already_decided")
    assert state(web) == before

    tools = web.get("/api/gate/tools")
    assert {t["name"]: t["risk"] for t in tools["tools"]} == {t.name: t.risk for t in TOOLS.values()}
    assert all({"kind", "asks_first"} <= set(o) for o in tools["outbound"])
    marker = web.post("/api/gate/reset-limit")
    assert marker["by"] == "web"
    rows = gate_rows(web)
    assert [n for n, _, _ in rows][-3:] == ["gate:confirmation", "gate:confirmation", "gate:limit reset"]
    assert "gate:limit reset [ok]" in context_4(web)
