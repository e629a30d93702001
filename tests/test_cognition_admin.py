"""The admin commands (scripts, agent tables, services and accounts, config, identity, ratings,
goal and task details, known agents), each through extraction and the executor: refusals are
error results with a reason, and a refused command changes nothing."""

from __future__ import annotations

import base64
import json

import pytest

from meshnode.engines.cognition import executor
from meshnode.engines.cognition.handlers import config as config_handlers
from meshnode.engines.cognition.handlers import tables as table_handlers
from meshnode.engines.cognition.command_types import command_type
from meshnode.engines.cognition.commands import Command, extract
from meshnode.base.identity.did import did_to_peer_id
from meshnode.base.identity.keys import NodeKey
from meshnode.store import Database
from meshnode.store.sharing import set_friend

T0 = 1_800_000_000_000
KEY = NodeKey(bytes(32))
PEERS = [NodeKey(bytes([i]) * 32).did for i in range(1, 6)]

READS = ["script_list", "script_read", "table_list", "table_query", "service_list", "account_list", "config_read",
         "identity_read", "ratings_list", "goal_read", "task_read"]
WRITES = ["script_add", "script_delete", "table_add", "table_delete", "table_insert", "service_add",
          "service_delete", "account_add", "account_delete", "config_update", "identity_update", "rating_delete",
          "goal_update", "goal_delete", "task_add", "task_delete", "agent_add", "agent_delete"]


@pytest.fixture
def db(tmp_path):
    database = Database(tmp_path / "admin.db")
    yield database
    database.close()


def run(db: Database, kind: str, args: dict) -> dict:
    answer = "# Commands:\n" + json.dumps({"cmd_id": "c1", "type": kind, "args": args}) + "\n# End of commands\n"
    extraction = extract(answer)
    assert not extraction.errors, extraction.errors
    return executor.run(db, KEY, T0, extraction.commands[0])


def ok(db: Database, kind: str, args: dict):
    result = run(db, kind, args)
    assert result["status"] == "ok", result
    return result["result"]


def refused(db: Database, kind: str, args: dict) -> str:
    result = run(db, kind, args)
    assert result["status"] == "error", result
    return result["error"]


def table_names(db: Database) -> list[str]:
    return sorted(r[0] for r in db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))


def rows(db: Database, sql: str, params=()) -> list[tuple]:
    return db.conn.execute(sql, params).fetchall()


def test_every_admin_command_has_a_handler_in_the_table_and_its_read_flag():
    for name in READS + WRITES:
        assert command_type(name) is not None, name
        assert executor.handles(name), name
        assert command_type(name).mutating == (name in WRITES), name


def refused_at_extraction(kind: str, args: dict) -> str:
    extraction = extract("# Commands:\n" + json.dumps({"cmd_id": "c1", "type": kind, "args": args}))
    assert not extraction.commands and len(extraction.errors) == 1, extraction
    return extraction.errors[0].reason


def test_unknown_arguments_are_refused_at_extraction_and_again_by_the_handler(db):
    assert "takes no 'bogus'" in refused_at_extraction("script_list", {"bogus": 1})
    direct = executor.run(db, KEY, T0, Command("c1", "identity_update", {"name": "x", "pubkey": "00"}))
    assert direct["status"] == "error" and "takes metadata, name, not pubkey" in direct["error"]
    assert "never change" in direct["error"]


def test_scripts_are_stored_read_and_deleted_and_a_duplicate_is_an_error_result(db):
    code = "import os\nos.system('rm -rf /')\n"
    assert ok(db, "script_add", {"name": "clean", "version": "1", "code": code, "language": "python",
                                 "description": "d" * 2000, "tags": ["ops"]}) == {"id": 1}
    error = refused(db, "script_add", {"name": "clean", "version": "1", "code": "x", "language": "shell"})
    assert "exists (id 1)" in error
    assert ok(db, "script_add", {"name": "clean", "version": "2", "code": "echo", "language": "shell"}) == {"id": 2}
    listing = ok(db, "script_list", {})
    assert [(s["id"], s["version"]) for s in listing] == [(1, "1"), (2, "2")]
    assert "code" not in listing[0] and listing[0]["tags"] == ["ops"]
    assert len(listing[0]["description"]) < 600 and listing[0]["description"].endswith("[2000 characters]")
    script = ok(db, "script_read", {"id": 1})
    assert script["code"] == code and script["description"] == "d" * 2000
    assert ok(db, "script_delete", {"id": 1}) == {"deleted": 1}
    assert refused(db, "script_read", {"id": 1}) == "no script 1"
    assert refused(db, "script_delete", {"id": 1}) == "no script 1"
    assert "language" in refused_at_extraction("script_add", {"name": "x", "version": "1", "code": "x",
                                                              "language": "ruby"})


HOSTILE_TABLES = ["notes", "x; DROP TABLE notes", "agent_t_x--", "Notes", "", "a" * 42, 'x"', "../x",
                  "sqlite_master", "config", "x y"]
HOSTILE_COLUMNS = [{"a b": "text"}, {'v"); DROP TABLE notes; --': "text"}, {"id": "integer"}, {"v": "varchar"},
                   {"v": ["text"]}, {"V": "text"}, {}, {f"c{i}": "text" for i in range(33)},
                   {"ok": "text", "bad-name": "text"}]


def test_hostile_table_and_column_names_are_refused_and_no_table_changes(db):
    with db.transaction() as conn:
        conn.execute('CREATE TABLE "agent_t_unregistered" (id INTEGER PRIMARY KEY, v TEXT)')
        conn.execute("INSERT INTO notes (text) VALUES ('keep me')")
    before, notes = table_names(db), rows(db, "SELECT * FROM notes")
    for name in HOSTILE_TABLES:
        assert refused(db, "table_add", {"name": name, "columns": {"v": "text"}}), name
        for kind, extra in (("table_delete", {}), ("table_insert", {"row": {"v": "x"}}), ("table_query", {})):
            assert refused(db, kind, {"name": name, **extra}), (kind, name)
    for columns in HOSTILE_COLUMNS:
        assert refused(db, "table_add", {"name": "fine", "columns": columns}), columns
    assert "no agent table 'unregistered'" in refused(db, "table_query", {"name": "unregistered"})
    assert refused(db, "table_delete", {"name": "unregistered"})
    assert table_names(db) == before and rows(db, "SELECT * FROM notes") == notes
    assert rows(db, "SELECT * FROM agent_tables") == []


def test_table_rows_round_trip_with_typed_values(db):
    made = ok(db, "table_add", {"name": "readings", "description": "sensor log",
                                "columns": {"label": "text", "count": "integer", "weight": "real", "raw": "blob"}})
    assert made["columns"] == {"id": "integer", "label": "text", "count": "integer", "weight": "real", "raw": "blob"}
    sql = ('CREATE TABLE "agent_t_readings" (id INTEGER PRIMARY KEY, "label" TEXT, "count" INTEGER,'
           ' "weight" REAL, "raw" BLOB)')
    assert rows(db, "SELECT table_name, schema FROM agent_tables") == [("agent_t_readings", sql)]
    assert rows(db, "SELECT sql FROM sqlite_master WHERE name = 'agent_t_readings'") == [(sql,)]
    raw = base64.b64encode(b"\x00\xffdata").decode()
    assert ok(db, "table_insert", {"name": "readings", "row": {"label": "a", "count": 3, "weight": 1, "raw": raw}}) \
        == {"id": 1}
    assert ok(db, "table_insert", {"name": "readings", "row": {"label": "b", "count": None, "weight": 2.5}}) \
        == {"id": 2}
    assert rows(db, 'SELECT typeof(count), typeof(weight), typeof(raw), raw FROM "agent_t_readings" WHERE id = 1') \
        == [("integer", "real", "blob", b"\x00\xffdata")]
    for row in ({"count": "3"}, {"count": True}, {"count": 1.5}, {"weight": "heavy"}, {"raw": "not base64!"},
                {"label": 7}, {"label": "x" * (table_handlers.MAX_CELL + 1)}, {"nope": 1}, {"id": 9}, {}):
        assert refused(db, "table_insert", {"name": "readings", "row": row}), row
    assert "its columns: label, count, weight, raw" in refused(db, "table_insert", {"name": "readings",
                                                                                   "row": {"nope": 1}})
    everything = ok(db, "table_query", {"name": "readings"})
    assert everything == [{"id": 1, "label": "a", "count": 3, "weight": 1.0, "raw": raw},
                          {"id": 2, "label": "b", "count": None, "weight": 2.5, "raw": None}]
    assert ok(db, "table_query", {"name": "readings", "where": {"label": "a"}}) == everything[:1]
    assert ok(db, "table_query", {"name": "readings", "where": {"count": None}}) == everything[1:]
    assert ok(db, "table_query", {"name": "readings", "where": {"id": 2, "weight": 2.5}}) == everything[1:]
    assert ok(db, "table_query", {"name": "readings", "limit": 1}) == everything[:1]
    assert refused(db, "table_query", {"name": "readings", "where": {"count": "3"}})
    assert refused(db, "table_query", {"name": "readings", "where": {"label; --": "a"}})
    ok(db, "table_insert", {"name": "readings", "row": {"label": "L" * 2000}})
    assert len(ok(db, "table_query", {"name": "readings"})[2]["label"]) < 600  # several rows: clipped
    assert ok(db, "table_query", {"name": "readings", "where": {"id": 3}})[0]["label"] == "L" * 2000
    listed = ok(db, "table_list", {})
    assert [(t["name"], t["rows"], t["description"]) for t in listed] == [("readings", 3, "sensor log")]
    assert refused(db, "table_add", {"name": "readings", "columns": {"v": "text"}}) == "agent table 'readings' exists"
    assert ok(db, "table_delete", {"name": "readings"}) == {"deleted": "readings"}
    assert "agent_t_readings" not in table_names(db) and rows(db, "SELECT * FROM agent_tables") == []
    assert refused(db, "table_query", {"name": "readings"})


def test_an_agent_table_holds_at_most_its_row_cap(db, monkeypatch):
    assert table_handlers.MAX_ROWS == 10_000
    monkeypatch.setattr(table_handlers, "MAX_ROWS", 3)
    ok(db, "table_add", {"name": "small", "columns": {"n": "integer"}})
    for n in range(3):
        ok(db, "table_insert", {"name": "small", "row": {"n": n}})
    assert "has 3 rows" in refused(db, "table_insert", {"name": "small", "row": {"n": 3}})
    assert rows(db, 'SELECT count(*) FROM "agent_t_small"') == [(3,)]


def test_services_and_accounts_never_show_a_password(db):
    for url in ("ftp://example.org", "javascript:alert(1)", "http://", "https://exa mple.org"):
        assert refused(db, "service_add", {"name": "x", "type": "blog", "base_url": url}), url
    assert ok(db, "service_add", {"name": "blog", "type": "blog", "base_url": "https://blog.example.org/api"}) \
        == {"id": 1}
    ok(db, "service_add", {"name": "forum", "type": "forum", "base_url": "http://forum.example.org"})
    assert refused(db, "account_add", {"service_id": 9, "login": "ada", "password": "pw"}).startswith("no service 9")
    secret = "hunter2-very-secret"
    made = ok(db, "account_add", {"service_id": 1, "login": "ada", "password": secret, "purpose": "posting"})
    ok(db, "account_add", {"service_id": 2, "login": "bob", "password": "other-secret"})
    assert secret not in json.dumps(made)
    listing = ok(db, "account_list", {})
    assert secret not in json.dumps(listing) and "other-secret" not in json.dumps(listing)
    assert [(a["login"], a["service"], a["password_set"]) for a in listing] == [("ada", "blog", True),
                                                                                ("bob", "forum", True)]
    assert [a["login"] for a in ok(db, "account_list", {"service_id": 2})] == ["bob"]
    assert rows(db, "SELECT password FROM external_accounts WHERE login = 'ada'") == [(secret,)]
    assert ok(db, "service_delete", {"id": 1}) == {"deleted": 1, "accounts_deleted": 1}
    assert [a["login"] for a in ok(db, "account_list", {})] == ["bob"]
    assert ok(db, "account_delete", {"id": 2}) == {"deleted": 2}
    assert refused(db, "account_delete", {"id": 2}) == "no account 2"
    assert [s["name"] for s in ok(db, "service_list", {})] == ["forum"]


def test_config_update_changes_only_allowlisted_keys(db, monkeypatch):
    with db.transaction() as conn:
        conn.executemany("INSERT INTO config (key, value) VALUES (?, ?)",
                         [("cycle.checkpoint", '{"tick": 4}'), ("cycle.pause_seconds", "5"),
                          ("cognition.emotions", '["calm"]'), ("node.api_token", '"abc"')])
    before = rows(db, "SELECT key, value FROM config ORDER BY key")
    for key in ("identity.name", "llm.main", "peers.bootstrap", "keys.private", "cycle.checkpoint", "agent.",
                "agent.Upper", "cognition.pinned", "cycle.pause_seconds", "node.api_token"):
        error = refused(db, "config_update", {"key": key, "value": "x"})
        assert "cognition.emotions and agent.<name>" in error, key
    assert "cycle_settings" in refused(db, "config_update", {"key": "cycle.pause_seconds", "value": 1})
    assert "pin and unpin" in refused(db, "config_update", {"key": "cognition.pinned", "value": []})
    for value in ([], "calm", [1], ["x" * 33], ["a"] * 33):
        assert refused(db, "config_update", {"key": "cognition.emotions", "value": value}), value
    assert refused(db, "config_update", {"key": "agent.big", "value": "x" * 5000})
    assert rows(db, "SELECT key, value FROM config ORDER BY key") == before
    assert ok(db, "config_update", {"key": "cognition.emotions", "value": ["calm", "joy"]}) \
        == {"set": "cognition.emotions"}
    assert ok(db, "config_update", {"key": "agent.style", "value": {"tone": "terse"}}) == {"set": "agent.style"}
    assert rows(db, "SELECT value FROM config WHERE key = 'cognition.emotions'") == [('["calm", "joy"]',)]
    settings = ok(db, "config_read", {})
    assert "cycle.checkpoint" not in settings["config"] and settings["config"]["node.api_token"] == "(hidden)"
    assert settings["config"]["agent.style"] == {"tone": "terse"} and settings["config"]["cycle.pause_seconds"] == 5
    assert ok(db, "config_read", {"key": "agent.style"}) == {"agent.style": {"tone": "terse"}}
    assert refused(db, "config_read", {"key": "cycle.checkpoint"})
    assert ok(db, "config_update", {"key": "agent.style", "value": None}) == {"removed": "agent.style"}
    monkeypatch.setattr(config_handlers, "MAX_AGENT_KEYS", 1)
    ok(db, "config_update", {"key": "agent.one", "value": 1})
    ok(db, "config_update", {"key": "agent.one", "value": 2})  # changing a held key is not a new one
    assert refused(db, "config_update", {"key": "agent.two", "value": 1})


def test_identity_update_changes_name_and_metadata_never_id_or_pubkey(db):
    with db.transaction() as conn:
        conn.execute("INSERT INTO identity (id, name, pubkey) VALUES (?, 'node', ?)", (KEY.did, KEY.public_key.hex()))
    before = rows(db, "SELECT * FROM identity")
    assert "takes no 'id'" in refused_at_extraction("identity_update", {"id": PEERS[0], "name": "evil"})
    assert "takes no 'pubkey'" in refused_at_extraction("identity_update", {"pubkey": "00" * 32})
    for sneaky in ({"name": "evil", "id": PEERS[0]}, {"pubkey": "00" * 32}):  # past extraction, the handler refuses
        assert executor.run(db, KEY, T0, Command("c1", "identity_update", sneaky))["status"] == "error"
    assert refused(db, "identity_update", {})
    assert rows(db, "SELECT * FROM identity") == before
    ok(db, "identity_update", {"name": "Ada", "metadata": {"lang": "en"}})
    assert rows(db, "SELECT id, name, pubkey, metadata FROM identity") \
        == [(KEY.did, "Ada", KEY.public_key.hex(), '{"lang": "en"}')]
    shown = ok(db, "identity_read", {})
    assert shown["did"] == KEY.did and shown["identity"][0]["metadata"] == {"lang": "en"}
    with db.transaction() as conn:
        conn.execute("DELETE FROM identity")
    ok(db, "identity_update", {"name": "Bea"})  # no row yet: made from the node's own key
    assert rows(db, "SELECT id, name, pubkey FROM identity") == [(KEY.did, "Bea", KEY.public_key.hex())]


def test_ratings_are_listed_and_withdrawn(db):
    ok(db, "method_add", {"name": "flashback", "description": "reread an old entry"})
    ok(db, "rate", {"kind": "thinking", "id": 1, "rating": 3})
    ok(db, "rate", {"kind": "thinking", "id": 1, "rating": -1})
    assert rows(db, "SELECT reputation FROM thinking_methods") == [(1.0,)]
    listed = ok(db, "ratings_list", {"target_type": "thinking_method"})
    assert [(r["id"], r["rating"]) for r in listed] == [(2, -1), (1, 3)]
    assert ok(db, "ratings_list", {"target_type": "stagnation_strategy"}) == []
    assert ok(db, "rating_delete", {"id": 2}) == {"deleted": 2}
    assert rows(db, "SELECT reputation FROM thinking_methods") == [(3.0,)]
    assert refused(db, "rating_delete", {"id": 2}) == "no rating 2"


def test_goals_and_tasks_are_read_changed_and_deleted(db):
    shared = ok(db, "goal_add", {"title": "ship"})  # a goal the agent makes is signed (GMP)
    assert ok(db, "goal_read", {"goal": 1})["tasks"] == []
    ok(db, "goal_update", {"id": 1, "title": "ship it", "status": "paused", "priority": "high"})
    assert rows(db, "SELECT name, status, priority, lineage FROM goals") == [("ship it", "paused", 0.75,
                                                                             shared["lineage"])]
    assert rows(db, "SELECT count(*) FROM containers WHERE class = 'goal'") == [(2,)]  # a new version, signed
    assert "shared" in refused(db, "goal_delete", {"id": 1})
    with db.transaction() as conn:  # a local goal (from before GMP) changes in place
        lg = conn.execute("INSERT INTO goals (name) VALUES ('local')").lastrowid
    ok(db, "goal_update", {"id": lg, "priority": 0.1})
    assert rows(db, f"SELECT priority FROM goals WHERE id = {lg}") == [(0.1,)]
    assert refused(db, "goal_update", {"id": lg})
    assert refused(db, "goal_update", {"id": 99, "status": "active"}) == "no goal 99"
    assert "status" in refused_at_extraction("goal_update", {"id": 1, "status": "gone"})
    assert "priority" in refused_at_extraction("goal_update", {"id": 1, "priority": 2})
    task = ok(db, "task_add", {"title": "write", "goal": shared["lineage"], "priority": 0.5, "tags": ["x"]})
    assert task["task"] == task["lineage"].removeprefix("did:hmp:container:uEi")[:10]
    assert "names no goal" in refused(db, "task_add", {"title": "orphan", "goal": "nosuchgoal"})
    lt = ok(db, "task_add", {"title": "local one", "priority": 0.9})["id"]
    read = ok(db, "goal_read", {"goal": 1})  # a shared goal reads as GMP shows it, by row number too
    assert [(t["task"], t["title"], t["status"]) for t in read["tasks"]] == [(task["task"], "write", "pending")]
    assert ok(db, "goal_read", {"goal": shared["lineage"]}) == read
    local = ok(db, "task_read", {"task": lt})
    assert (local["goal_id"], local["status"]) == (None, "pending")
    assert "shared" in refused(db, "task_delete", {"id": 1})
    with db.transaction() as conn:
        conn.execute("INSERT INTO goal_links (parent_goal_id, child_goal_id) VALUES (?, ?)", (lg, lg))
        conn.execute("INSERT INTO tasks (name, goal_id) VALUES ('under local', ?)", (lg,))
        conn.execute("INSERT INTO llm_recent_responses (role, content, task_id) VALUES ('assistant', 'hi', ?)", (lt,))
    assert ok(db, "goal_delete", {"id": lg}) == {"deleted": lg, "tasks_detached": 1}
    assert refused(db, "goal_read", {"goal": lg}) == f"no goal {lg}"
    assert rows(db, "SELECT * FROM goal_links") == []
    assert ok(db, "task_delete", {"id": lt}) == {"deleted": lt}
    assert rows(db, "SELECT task_id FROM llm_recent_responses") == [(None,)]
    assert refused(db, "task_read", {"task": lt}) == f"no task {lt}"
    running = ok(db, "llm_task", {"task_description": "look around", "mode": "read_only_loop"})["task_id"]
    assert "running auxiliary loop" in refused(db, "task_delete", {"id": running})
    assert running in [r[0] for r in rows(db, "SELECT id FROM tasks")]


def test_agents_are_added_and_only_unrecorded_ones_deleted(db):
    assert ok(db, "agent_add", {"did": PEERS[0], "name": "bob", "tags": ["helper"]}) \
        == {"did": PEERS[0], "peer_id": did_to_peer_id(PEERS[0])}
    assert rows(db, "SELECT name, tags, status FROM agent_peers WHERE id = ?", (PEERS[0],)) \
        == [("bob", '["helper"]', "unknown")]
    assert "known already" in refused(db, "agent_add", {"did": PEERS[0]})
    assert refused(db, "agent_add", {"did": KEY.did})
    assert "only the user" in refused(db, "agent_add", {"did": PEERS[1], "tags": ["friend"]})
    assert refused(db, "agent_add", {"did": "did:web:example.org"})
    set_friend(db, PEERS[2], did_to_peer_id(PEERS[2]), T0)
    ok(db, "agent_add", {"did": PEERS[3]})
    ok(db, "agent_add", {"did": PEERS[4]})
    with db.transaction() as conn:
        conn.execute("UPDATE agent_peers SET status = 'blacklisted' WHERE id = ?", (PEERS[3],))
        conn.execute("INSERT INTO reputation_evidence (did, kind, ref, at_ms) VALUES (?, 'invalid', 'r1', 1)",
                     (PEERS[4],))
    for peer in PEERS[2:]:
        assert refused(db, "agent_delete", {"did": peer}), peer
    assert refused(db, "agent_delete", {"did": PEERS[1]}) == f"no agent {PEERS[1]}"
    assert ok(db, "agent_delete", {"did": PEERS[0]}) == {"deleted": PEERS[0]}
    assert sorted(r[0] for r in rows(db, "SELECT id FROM agent_peers")) == sorted(PEERS[2:])
