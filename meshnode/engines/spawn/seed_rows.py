"""The local rows a child gets (rule ``row`` in ``kinds.TABLES``), by explicit columns.

Only the columns named here are read from the parent, so a column a future migration adds (a
secret, say) is not copied until someone decides it here. Rows go into the child's own schema with
``INSERT OR IGNORE`` (a row the child already has wins); ids that point at rows the child does not
hold the same way are remapped (diary entries by lineage, notes by container) or cleared.
"""

from __future__ import annotations

import json
import re
import sqlite3
from typing import Callable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from meshnode.engines.spawn import kinds
from meshnode.store.database import Database

Row = dict
Transform = Callable[[Row], Row | None]

# table -> columns read from the parent (in the order the tables are copied: peers before what names
# them, methods before their ratings, the agent's table register before its tables)
COLUMNS: dict[str, tuple[str, ...]] = {
    "agent_peers": ("id", "name", "addresses", "tags", "status", "source", "last_seen", "description",
                    "capabilities", "pubkey", "heard_from", "software_info", "registered_at", "peer_id",
                    "announce_did", "interests"),
    "agent_reputation": ("agent_id", "identity", "reputation_score", "trust_level", "notes", "last_interaction",
                         "updated_ms", "capped_until_ms", "counts", "applied"),
    "peer_standing": ("did", "valid", "invalid", "invalid_by_code", "rate_limited", "banned_until_ms",
                      "updated_at_ms"),
    "reputation_evidence": ("did", "kind", "ref", "at_ms"),
    "config": ("key", "value"),
    "llm_registry": ("id", "name", "description", "config_json", "is_validator", "trust_score", "registered_at"),
    "system_prompts": ("id", "name", "type", "version", "source", "content", "updated_at"),
    "ethics_policies": ("id", "version", "source", "sync_enabled", "mesh_endpoint", "consensus_threshold",
                        "check_interval", "model_type", "model_weights_json", "principles_json", "evaluation_json",
                        "violation_policy_json", "audit_json", "updated_at"),
    "thinking_methods": ("id", "name", "description", "type", "source", "tags", "reputation", "active",
                         "inactive_reason"),
    "stagnation_strategies": ("id", "name", "description", "source", "tags", "reputation", "active",
                              "inactive_reason"),
    "ratings": ("id", "agent_id", "target_type", "target_id", "rating", "comment", "timestamp"),
    "agent_scripts": ("id", "name", "version", "code", "language", "description", "tags", "created_at", "updated_at",
                      "llm_id"),
    "external_services": ("id", "name", "type", "base_url", "description", "active", "inactive_reason"),
    "llm_memory": ("id", "title", "content", "tags", "created_at", "updated_at", "llm_id"),
    "abstracts": ("id", "title", "summary", "tags", "sources", "updated_at", "llm_id"),
    "unverified_facts": ("id", "claim", "context_snippet", "confidence", "sources_json", "why_unverified", "status",
                         "checker_agent", "resolution_json", "created_at", "last_checked_at"),
    "ethics_cases": ("case_id", "thought_id", "verdict", "reason", "suggested_alternative", "created_at", "synced"),
    "diary_graph_index": ("source_entry_id", "target_entry_id", "relation", "strength", "context", "timestamp"),
    "attachments": ("message_id", "filename", "mime_type", "size", "binary"),
    "agent_tables": ("id", "table_name", "description", "schema", "created_at", "llm_id"),
}

SECRET = re.compile(r"secret|password|passphrase|token|private|credential|api_?key|auth", re.IGNORECASE)
SETTINGS = re.compile(r"cycle\.[a-z0-9_.]+|cognition\.emotions|agent\.[a-z][a-z0-9_.]{0,62}")
RUNTIME_SETTINGS = ("cycle.checkpoint",)
LLM_FIELDS = ("base_url", "model", "priority", "api_key_env", "timeout_s")  # what cognition.registry reads
AGENT_TABLE = re.compile(r"agent_t_[a-z][a-z0-9_]{0,40}")  # cognition.handlers.tables' names
COLUMN = re.compile(r"[a-z][a-z0-9_]{0,40}")
COLUMN_TYPES = ("INTEGER", "REAL", "TEXT", "BLOB")


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def clean_url(url):
    """``url`` without a user:password@ part and without query parameters whose name looks secret."""
    if not isinstance(url, str):
        return url
    try:
        parts = urlsplit(url)
        netloc = parts.netloc.rsplit("@", 1)[-1]
        query = urlencode([(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not SECRET.search(k)])
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError:
        return None


def _peer(row: Row) -> Row:
    """Known agents keep their tags as the parent has them; the spawn then takes the Friend tag off
    all but the friends ``--friends`` keeps (spawn.friends, on the child's or the bundle's store)."""
    if row["status"] in ("online", "offline"):
        row["status"] = "unknown"  # observed fresh by the child; untrusted and blacklisted are judgements
    return row


def _setting(row: Row) -> Row | None:
    key = row["key"]
    if not isinstance(key, str) or key in RUNTIME_SETTINGS or not SETTINGS.fullmatch(key) or SECRET.search(key):
        return None
    return row


def _llm(row: Row) -> Row | None:
    try:
        config = json.loads(row["config_json"] or "{}")
    except ValueError:
        return None
    if not isinstance(config, dict):
        return None
    kept = {k: config[k] for k in LLM_FIELDS if k in config}
    if "base_url" in kept:
        kept["base_url"] = clean_url(kept["base_url"])
    row["config_json"] = json.dumps(kept)
    return row


def _service(row: Row) -> Row:
    row["base_url"] = clean_url(row["base_url"])
    return row


TRANSFORMS: dict[str, Transform] = {"agent_peers": _peer, "config": _setting, "llm_registry": _llm,
                                    "external_services": _service}


def columns_of(conn: sqlite3.Connection, table: str) -> list[str]:
    return [r[1] for r in conn.execute(f"PRAGMA table_info({quoted(table)})")]


def copy_rows(src: sqlite3.Connection, child: Database, kind: str, report) -> None:
    """Every table whose rule for ``kind`` is ``row``, in one transaction of the child's."""
    remaps = {"diary_graph_index": _diary_remap, "ethics_cases": _diary_remap, "attachments": _note_remap}
    with child.transaction() as conn:
        for table in COLUMNS:
            if kinds.rule(kind, table=table) != "row":
                continue
            remap = remaps[table](src, conn, table) if table in remaps else None
            report.count(report.copied, table, copy_table(src, conn, table, TRANSFORMS.get(table), remap))
        if kinds.rule(kind, table=kinds.AGENT_TABLES) == "row":
            for table, cols in _agent_tables(src, conn):
                report.count(report.copied, table, copy_table(src, conn, table, None, None, cols))


def copy_table(src: sqlite3.Connection, conn: sqlite3.Connection, table: str, transform: Transform | None,
               remap: Transform | None, columns: tuple[str, ...] | None = None) -> int:
    """Rows of ``table`` into the child (``conn``), the named columns both sides have; returns how many."""
    have_src, have_child = set(columns_of(src, table)), set(columns_of(conn, table))
    cols = [c for c in (columns or COLUMNS[table]) if c in have_src and c in have_child]
    if not cols:
        return 0
    names = ", ".join(quoted(c) for c in cols)
    sql = src.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0] or ""
    order = "1" if "WITHOUT ROWID" in sql.upper() else "rowid"  # the parent's insertion order where it has one
    insert = f"INSERT OR IGNORE INTO {quoted(table)} ({names}) VALUES ({', '.join('?' * len(cols))})"
    n = 0
    for values in src.execute(f"SELECT {names} FROM {quoted(table)} ORDER BY {order}"):
        row: Row | None = dict(zip(cols, values))
        for step in (transform, remap):
            if row is not None and step is not None:
                row = step(row)
        if row is not None:
            n += conn.execute(insert, [row[c] for c in cols]).rowcount
    return n


def _id_map(src: sqlite3.Connection, conn: sqlite3.Connection, table: str, key: str) -> dict[int, int]:
    """The parent's row id -> the child's row id of the same ``key`` (a lineage, a container)."""
    mine = dict(conn.execute(f"SELECT {key}, id FROM {table} WHERE {key} IS NOT NULL"))
    return {pid: mine[k] for pid, k in src.execute(f"SELECT id, {key} FROM {table} WHERE {key} IS NOT NULL")
            if k in mine}


def _diary_remap(src: sqlite3.Connection, conn: sqlite3.Connection, table: str) -> Transform:
    ids = _id_map(src, conn, "diary_entries", "lineage")

    def remap(row: Row) -> Row | None:
        if table == "ethics_cases":
            row["thought_id"] = ids.get(row["thought_id"])  # a precedent outlives its thought (SET NULL)
            return row
        row["source_entry_id"], row["target_entry_id"] = ids.get(row["source_entry_id"]), ids.get(
            row["target_entry_id"])
        return row if row["source_entry_id"] is not None and row["target_entry_id"] is not None else None

    return remap


def _note_remap(src: sqlite3.Connection, conn: sqlite3.Connection, table: str) -> Transform:
    ids = _id_map(src, conn, "notes", "container_did")

    def remap(row: Row) -> Row | None:
        row["message_id"] = ids.get(row["message_id"])
        return row if row["message_id"] is not None else None  # the note was not copied: nor is its file

    return remap


def _agent_tables(src: sqlite3.Connection, conn: sqlite3.Connection) -> list[tuple[str, tuple[str, ...]]]:
    """Re-create in the child each registered agent table the parent has, from its checked columns
    (never by running SQL text read from the parent); returns them with their columns."""
    made = []
    for (name,) in src.execute("SELECT table_name FROM agent_tables ORDER BY id").fetchall():
        if not isinstance(name, str) or not AGENT_TABLE.fullmatch(name):
            continue
        cols = [(r[1], (r[2] or "").upper()) for r in src.execute(f"PRAGMA table_info({quoted(name)})")]
        body = [(c, t) for c, t in cols if c != "id" and COLUMN.fullmatch(c) and t in COLUMN_TYPES]
        if not cols or not body:
            continue
        sql = (f"CREATE TABLE {quoted(name)} (id INTEGER PRIMARY KEY, "
               + ", ".join(f"{quoted(c)} {t}" for c, t in body) + ")")
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is None:
            conn.execute(sql)
        conn.execute("UPDATE agent_tables SET schema = ? WHERE table_name = ?", (sql, name))
        made.append((name, ("id", *(c for c, _ in body))))
    return made
