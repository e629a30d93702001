"""Tests for migration 0001 (the HMP agent tables, with the reference defects fixed).

Only stdlib sqlite3 and pytest: the SQL file is loaded straight into an
in-memory database, the way the migration runner would run it.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

SQL_PATH = Path(__file__).resolve().parents[1] / "meshnode" / "store" / "migrations" / "0001_hmp_agent_tables.sql"

# The 34 tables the digest lists (section 4). Its "35 tables" also counts
# sqlite_sequence, which SQLite creates for AUTOINCREMENT columns.
EXPECTED_TABLES = {
    # cognitive memory
    "diary_entries", "concepts", "links", "diary_graph_index", "abstracts",
    "llm_memory", "llm_recent_responses", "unverified_facts", "anti_stagnation_metrics",
    # goals and tasks
    "goals", "goal_links", "tasks",
    # ethics and prompts
    "system_prompts", "ethics_policies", "ethics_cases",
    # peers, reputation, identity
    "agent_peers", "agent_reputation", "identity", "config", "llm_registry",
    # user notebook / chat
    "notes", "attachments", "users", "users_group", "password_reset_tokens",
    # process control and logging
    "process_log", "main_process",
    # agent extensibility and methods
    "agent_tables", "agent_scripts", "external_services", "external_accounts",
    "stagnation_strategies", "thinking_methods", "ratings",
}

EXPECTED_VIEWS = {
    "rated_entities": ["entity_type", "entity_id", "name", "description", "tags", "reputation", "ratings_count"],
    "tag_usage": ["tag", "usage_count", "first_used", "last_used", "sources"],
    "validation_stats": [
        "msg_id", "validator_count", "avg_rating_unweighted", "avg_rating_weighted",
        "response_time", "uncertainty_ratio",
    ],
    "v_anti_stagnation_trends": ["day", "avg_novelty", "total_new_ideas", "total_refined", "total_discarded"],
}

EXPECTED_TRIGGERS = {
    "trg_update_reputation_insert",
    "trg_update_reputation_update",
    "trg_update_reputation_delete",
}

EXPECTED_INDEXES = {
    "idx_unverified_facts_status",
    "idx_unverified_facts_context",
    "idx_notes_timestamp",
    "idx_diary_entries_timestamp",
    "idx_tasks_goal_id",
    "idx_process_log_timestamp",
}


def _sql() -> str:
    return SQL_PATH.read_text(encoding="utf-8")


@pytest.fixture
def db():
    conn = sqlite3.connect(":memory:")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.executescript(_sql())
    yield conn
    conn.close()


def _names(conn, kind):
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = ?", (kind,))}


def _columns(conn, table):
    return [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]


# --------------------------------------------------------------------------
# schema objects
# --------------------------------------------------------------------------

def test_exactly_the_digest_tables(db):
    tables = _names(db, "table")
    assert len(EXPECTED_TABLES) == 34
    assert tables - {"sqlite_sequence"} == EXPECTED_TABLES
    # the digest's count of 35 includes sqlite_sequence
    assert "sqlite_sequence" in tables and len(tables) == 35


def test_views_triggers_indexes(db):
    assert _names(db, "view") == set(EXPECTED_VIEWS)
    assert _names(db, "trigger") == EXPECTED_TRIGGERS
    assert EXPECTED_INDEXES <= _names(db, "index")
    fact_indexes = {r[1]: [c[2] for c in db.execute(f"PRAGMA index_info({r[1]})")]
                    for r in db.execute("PRAGMA index_list(unverified_facts)")}
    assert fact_indexes["idx_unverified_facts_status"] == ["status"]
    assert fact_indexes["idx_unverified_facts_context"] == ["context_msg_id"]


def test_runs_inside_the_runner_transaction():
    # The runner wraps the file in BEGIN IMMEDIATE ... COMMIT; a BEGIN or
    # COMMIT inside the file would make this fail.
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("PRAGMA foreign_keys=ON")
    conn.executescript(f"BEGIN IMMEDIATE;\n{_sql()}\n;PRAGMA user_version = 1;\nCOMMIT;")
    assert not conn.in_transaction
    assert _names(conn, "table") - {"sqlite_sequence"} == EXPECTED_TABLES
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


def test_no_transaction_or_pragma_statements_in_file():
    code = "\n".join(line.split("--", 1)[0] for line in _sql().splitlines())
    assert not re.search(r"\bPRAGMA\b", code, re.I)
    assert not re.search(r"\bCOMMIT\b|\bROLLBACK\b|\bEND\s+TRANSACTION\b", code, re.I)
    # BEGIN only opens trigger bodies
    assert len(re.findall(r"\bBEGIN\b", code, re.I)) == len(EXPECTED_TRIGGERS)
    assert not re.search(r"IF\s+NOT\s+EXISTS", code, re.I)


def test_identity_has_no_privkey(db):
    cols = _columns(db, "identity")
    assert "privkey" not in cols
    assert cols == ["id", "name", "pubkey", "metadata", "created_at", "updated_at"]


def test_llm_recent_responses_has_every_column(db):
    # the reference file lost everything after self_validation to a missing comma
    assert _columns(db, "llm_recent_responses")[-5:] == [
        "auto_pass", "self_validation", "rating", "distribution", "validators",
    ]


def test_notes_columns_unchanged(db):
    assert _columns(db, "notes") == [
        "id", "topic", "text", "code", "tags", "mentions", "hashtags", "user_did", "agent_did",
        "source", "task_id", "links", "read", "hidden", "priority", "timestamp", "llm_id",
    ]


def test_agent_reputation_agent_id_is_text_fk(db):
    info = {r[1]: r for r in db.execute("PRAGMA table_info(agent_reputation)")}
    assert info["agent_id"][2].upper() == "TEXT"
    fks = [(r[2], r[3], r[4]) for r in db.execute("PRAGMA foreign_key_list(agent_reputation)")]
    assert fks == [("agent_peers", "agent_id", "id")]
    db.execute("INSERT INTO agent_peers (id, name) VALUES ('did:hmp:peer-1', 'peer one')")
    db.execute("INSERT INTO agent_reputation (agent_id, reputation_score) VALUES ('did:hmp:peer-1', 0.8)")
    with pytest.raises(sqlite3.IntegrityError):
        db.execute("INSERT INTO agent_reputation (agent_id) VALUES ('did:hmp:nobody')")


def test_unverified_facts_resolution_default_is_json(db):
    db.execute("INSERT INTO unverified_facts (id, claim) VALUES ('uf-1', 'water boils at 90C')")
    status, resolution = db.execute(
        "SELECT status, resolution_json FROM unverified_facts WHERE id = 'uf-1'"
    ).fetchone()
    assert status == "open"
    assert json.loads(resolution) == {"status": "pending"}


def test_ethics_cases_fk_set_null(db):
    db.execute("INSERT INTO diary_entries (id, text) VALUES (7, 'a thought')")
    db.execute("INSERT INTO ethics_cases (thought_id, verdict) VALUES (7, 'warning')")
    db.execute("DELETE FROM diary_entries WHERE id = 7")
    assert db.execute("SELECT thought_id FROM ethics_cases").fetchall() == [(None,)]


def test_attachments_cascade(db):
    db.execute("INSERT INTO notes (id, text) VALUES (1, 'with file')")
    db.execute("INSERT INTO attachments (message_id, filename, binary) VALUES (1, 'a.bin', x'00ff')")
    db.execute("DELETE FROM notes WHERE id = 1")
    assert db.execute("SELECT COUNT(*) FROM attachments").fetchone()[0] == 0


# --------------------------------------------------------------------------
# CHECK constraints
# --------------------------------------------------------------------------

@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO tasks (name, status) VALUES ('t', 'bogus')",
        "INSERT INTO tasks (name, repl_mode) VALUES ('t', 'write_all')",
        "INSERT INTO goals (name, status) VALUES ('g', 'done')",
        "INSERT INTO goals (name, priority) VALUES ('g', 'urgent')",
        "INSERT INTO unverified_facts (id, claim, status) VALUES ('u', 'c', 'maybe')",
        "INSERT INTO llm_recent_responses (role, content) VALUES ('system', 'x')",
        "INSERT INTO process_log (name, status) VALUES ('p', 'fine')",
        "INSERT INTO ratings (agent_id, target_type, target_id, rating) VALUES ('a', 'concept', 1, 1)",
        "INSERT INTO agent_peers (id, status) VALUES ('p', 'friendly')",
        "INSERT INTO notes (text, source) VALUES ('n', 'mesh?')",
        "INSERT INTO ethics_cases (verdict) VALUES ('bad')",
    ],
)
def test_check_rejects_bad_values(db, sql):
    with pytest.raises(sqlite3.IntegrityError):
        db.execute(sql)


def test_check_accepts_defaults_and_listed_values(db):
    db.execute("INSERT INTO goals (name) VALUES ('g')")
    db.execute("INSERT INTO tasks (goal_id, name, status, repl_mode) VALUES (1, 't', 'in_progress', 'read_only')")
    db.execute("INSERT INTO agent_peers (id) VALUES ('p')")
    assert db.execute("SELECT status, priority FROM goals").fetchone() == ("active", "normal")
    assert db.execute("SELECT status, repl_status FROM tasks").fetchone() == ("in_progress", "stopped")
    assert db.execute("SELECT status FROM agent_peers").fetchone() == ("unknown",)


# --------------------------------------------------------------------------
# views
# --------------------------------------------------------------------------

@pytest.mark.parametrize("view", sorted(EXPECTED_VIEWS))
def test_view_selectable_on_empty_db(db, view):
    cur = db.execute(f"SELECT * FROM {view}")
    assert cur.fetchall() == []
    assert [d[0] for d in cur.description] == EXPECTED_VIEWS[view]


def test_tag_usage_counts(db):
    diary = [
        ('["mesh","ethics"]', "2025-01-01 10:00:00"),
        ('["mesh"," repl "]', "2025-01-02 10:00:00"),
        ('["mesh","mesh"]', "2025-01-03 10:00:00"),   # repeated tag counts once for the row
        ("mesh,ethics", "2025-01-04 10:00:00"),       # not JSON: ignored
        ('{"tag":"mesh"}', "2025-01-05 10:00:00"),    # not an array: ignored
        ('[1, null, "", "  "]', "2025-01-06 10:00:00"),  # no usable string element
        (None, "2025-01-07 10:00:00"),
    ]
    db.executemany("INSERT INTO diary_entries (text, tags, timestamp) VALUES ('entry', ?, ?)", diary)
    db.executemany(
        "INSERT INTO notes (text, tags, timestamp) VALUES ('note', ?, ?)",
        [('["ethics","chat"]', "2024-12-31 09:00:00"), ('["mesh"]', "2025-02-01 00:00:00")],
    )
    db.execute("INSERT INTO goals (name, tags, created_at) VALUES ('goal', '[\"mesh\"]', '2025-03-01 00:00:00')")
    db.execute("INSERT INTO thinking_methods (name, description, tags) VALUES ('m', 'd', '[\"chat\"]')")

    rows = {r[0]: r[1:] for r in db.execute("SELECT * FROM tag_usage")}
    assert set(rows) == {"mesh", "ethics", "repl", "chat"}

    # mesh: diary rows 1, 2, 3 + one note + one goal
    count, first, last, sources = rows["mesh"]
    assert count == 5
    assert (first, last) == ("2025-01-01 10:00:00", "2025-03-01 00:00:00")
    assert set(sources.split(",")) == {"diary_entries", "notes", "goals"}

    count, first, last, sources = rows["ethics"]
    assert count == 2
    assert (first, last) == ("2024-12-31 09:00:00", "2025-01-01 10:00:00")
    assert set(sources.split(",")) == {"diary_entries", "notes"}

    assert rows["repl"][:3] == (1, "2025-01-02 10:00:00", "2025-01-02 10:00:00")

    # the thinking method has no time column: counted, but no time
    count, first, last, sources = rows["chat"]
    assert count == 2
    assert (first, last) == ("2024-12-31 09:00:00", "2024-12-31 09:00:00")
    assert set(sources.split(",")) == {"notes", "thinking_methods"}

    # ordered by usage_count descending
    assert [r[0] for r in db.execute("SELECT tag FROM tag_usage")][0] == "mesh"


def _add_response(conn, validators):
    cur = conn.execute(
        "INSERT INTO llm_recent_responses (role, content, validators) VALUES ('assistant', 'answer', ?)",
        (validators if validators is None or isinstance(validators, str) else json.dumps(validators),),
    )
    return cur.lastrowid


def test_validation_stats_numbers(db):
    msg = _add_response(db, [
        {"validator": "llm-a", "rating": 3, "trust": 1.0, "comment": "solid"},
        {"validator": "llm-b", "rating": -1, "trust": 0.5, "comment": "one logic slip"},
        {"validator": "llm-c", "rating": 0, "trust": 0.5, "comment": "unsure"},
    ])
    cur = db.execute("SELECT * FROM validation_stats WHERE msg_id = ?", (msg,))
    row = dict(zip([d[0] for d in cur.description], cur.fetchone()))
    assert row["validator_count"] == 3
    assert row["avg_rating_unweighted"] == pytest.approx(2 / 3)          # (3 - 1 + 0) / 3
    assert row["avg_rating_weighted"] == pytest.approx(1.25)             # (3*1 - 1*0.5 + 0*0.5) / 2.0
    assert row["response_time"] is None
    assert row["uncertainty_ratio"] == pytest.approx(1 / 3)


def test_validation_stats_edge_cases(db):
    # integer trusts must not cause integer division: (3*1 - 2*1) / 2 = 0.5
    ints = _add_response(db, [{"validator": "x", "rating": 3, "trust": 1}, {"validator": "y", "rating": -2, "trust": 1}])
    # all trusts zero -> weighted is NULL
    zero = _add_response(db, [{"validator": "x", "rating": 2, "trust": 0}, {"validator": "y", "rating": 0, "trust": 0}])
    # trust missing -> llm_registry.trust_score, else 1.0
    db.execute("INSERT INTO llm_registry (id, name, trust_score) VALUES ('reg-llm', 'registered', 0.25)")
    fallback = _add_response(db, [{"validator": "reg-llm", "rating": -3}, {"validator": "unknown-llm", "rating": 1}])
    # no validators / empty / malformed: no row, and no error
    none_ = _add_response(db, None)
    empty = _add_response(db, [])
    broken = _add_response(db, "not json at all")

    rows = {r[0]: r for r in db.execute(
        "SELECT msg_id, validator_count, avg_rating_unweighted, avg_rating_weighted, uncertainty_ratio "
        "FROM validation_stats")}
    assert set(rows) == {ints, zero, fallback}
    assert rows[ints][3] == pytest.approx(0.5)
    assert rows[zero][3] is None
    assert rows[zero][4] == pytest.approx(0.5)
    # (-3*0.25 + 1*1.0) / 1.25 = 0.2
    assert rows[fallback][3] == pytest.approx(0.2)
    assert rows[fallback][2] == pytest.approx(-1.0)
    assert none_ not in rows and empty not in rows and broken not in rows


def test_anti_stagnation_trends(db):
    db.executemany(
        "INSERT INTO anti_stagnation_metrics (tick_id, novelty_score, new_ideas, refined_ideas, discarded_ideas, created_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        [
            ("t1", 0.2, 1, 0, 2, "2025-05-01 08:00:00"),
            ("t2", 0.6, 3, 1, 0, "2025-05-01 20:00:00"),
            ("t3", 0.9, 2, 2, 1, "2025-05-02 09:30:00"),
        ],
    )
    rows = db.execute("SELECT * FROM v_anti_stagnation_trends").fetchall()
    assert [r[0] for r in rows] == ["2025-05-01", "2025-05-02"]
    assert rows[0][1] == pytest.approx(0.4)
    assert rows[0][2:] == (4, 1, 2)
    assert rows[1][1] == pytest.approx(0.9)
    assert rows[1][2:] == (2, 2, 1)


# --------------------------------------------------------------------------
# reputation triggers and rated_entities
# --------------------------------------------------------------------------

def _rep(conn, table, id_):
    return conn.execute(f"SELECT reputation FROM {table} WHERE id = ?", (id_,)).fetchone()[0]


def test_reputation_triggers(db):
    db.execute("INSERT INTO thinking_methods (id, name, description) VALUES (1, 'iterate', 'refine step by step')")
    db.execute("INSERT INTO thinking_methods (id, name, description) VALUES (2, 'invert', 'solve the opposite')")
    db.execute("INSERT INTO stagnation_strategies (id, name, description) VALUES (1, 'ask mesh', 'ask peers')")

    def rate(target_type, target_id, rating):
        return db.execute(
            "INSERT INTO ratings (agent_id, target_type, target_id, rating) VALUES ('did:hmp:me', ?, ?, ?)",
            (target_type, target_id, rating),
        ).lastrowid

    r1 = rate("thinking_method", 1, 4)
    assert _rep(db, "thinking_methods", 1) == pytest.approx(4.0)
    r2 = rate("thinking_method", 1, 1)
    assert _rep(db, "thinking_methods", 1) == pytest.approx(2.5)
    # a stagnation strategy with the same id is a different entity
    assert _rep(db, "stagnation_strategies", 1) == 0
    s1 = rate("stagnation_strategy", 1, -2)
    assert _rep(db, "stagnation_strategies", 1) == pytest.approx(-2.0)
    assert _rep(db, "thinking_methods", 1) == pytest.approx(2.5)

    # update the value
    db.execute("UPDATE ratings SET rating = 5 WHERE id = ?", (r2,))
    assert _rep(db, "thinking_methods", 1) == pytest.approx(4.5)

    # move a rating to another method: both old and new are recomputed
    db.execute("UPDATE ratings SET target_id = 2 WHERE id = ?", (r2,))
    assert _rep(db, "thinking_methods", 1) == pytest.approx(4.0)
    assert _rep(db, "thinking_methods", 2) == pytest.approx(5.0)

    # move a rating across types
    db.execute("UPDATE ratings SET target_type = 'stagnation_strategy', target_id = 1 WHERE id = ?", (r1,))
    assert _rep(db, "thinking_methods", 1) == 0
    assert _rep(db, "stagnation_strategies", 1) == pytest.approx(1.0)   # (-2 + 4) / 2

    rated = {(r[0], r[1]): (r[5], r[6]) for r in db.execute("SELECT * FROM rated_entities")}
    assert rated == {
        ("thinking_method", 1): (0, 0),
        ("thinking_method", 2): (5.0, 1),
        ("stagnation_strategy", 1): (1.0, 2),
    }

    # delete: recomputed, and 0 once none remain
    db.execute("DELETE FROM ratings WHERE id = ?", (s1,))
    assert _rep(db, "stagnation_strategies", 1) == pytest.approx(4.0)
    db.execute("DELETE FROM ratings")
    for table, id_ in (("thinking_methods", 1), ("thinking_methods", 2), ("stagnation_strategies", 1)):
        assert _rep(db, table, id_) == 0
    assert [r[6] for r in db.execute("SELECT * FROM rated_entities")] == [0, 0, 0]
