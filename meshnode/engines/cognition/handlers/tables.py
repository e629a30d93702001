"""The agent's own tables (seed 000: agent_tables list/add/delete, plus insert and query).

The LLM never writes SQL: it names a table and its columns, both checked against
``IDENTIFIER``, and this module builds the statements. Each table is created as
``agent_t_<name>`` and recorded in ``agent_tables`` with the SQL made for it; every
later command works only on a table found there. Values are bound as parameters and
checked against the column's type.
"""

from __future__ import annotations

import base64
import math
import re

from meshnode.engines.cognition.handlers.rows import clip_text, rows_of, sql_time
from meshnode.base.errors import MeshnodeError

IDENTIFIER = re.compile(r"[a-z][a-z0-9_]{0,40}")
TABLE_PREFIX = "agent_t_"
COLUMN_TYPES = {"integer": "INTEGER", "real": "REAL", "text": "TEXT", "blob": "BLOB"}
MAX_COLUMNS = 32
MAX_TABLES = 64
MAX_ROWS = 10_000
MAX_CELL = 16 * 1024  # characters of text, or bytes of a blob
MAX_ROW = 64 * 1024


def _identifier(value, what: str) -> str:
    if type(value) is not str or not IDENTIFIER.fullmatch(value):
        raise MeshnodeError("bad_name", f"{what} {str(value)[:60]!r} is not allowed: 1 to 41 of a-z, 0-9, _"
                                        " starting with a letter")
    return value


def _agent_table(db, name) -> tuple[str, dict[str, str]]:
    """The SQL name and {column: type} of agent table ``name``: registered in agent_tables and present."""
    table = TABLE_PREFIX + _identifier(name, "table name")
    if db.conn.execute("SELECT 1 FROM agent_tables WHERE table_name = ?", (table,)).fetchone() is None:
        raise MeshnodeError("not_found", f"no agent table {name!r}; table_list shows them by name")
    info = db.conn.execute(f'PRAGMA table_info("{table}")').fetchall()
    if not info:
        raise MeshnodeError("not_found", f"agent table {name!r} is registered but missing; table_delete clears it")
    return table, {c[1]: c[2].lower() for c in info if IDENTIFIER.fullmatch(c[1])}


def _cell(kind: str, value, column: str):
    """``value`` as column type ``kind`` wants it; blobs travel as base64 text."""
    if value is None:
        return None
    if kind == "integer" and type(value) is int and -(2**63) <= value < 2**63:
        return value
    if kind == "real" and ((type(value) is float and math.isfinite(value))
                           or (type(value) is int and abs(value) < 2**63)):
        return float(value)
    if kind == "text" and type(value) is str and len(value) <= MAX_CELL:
        return value
    if kind == "blob" and type(value) is str:
        try:
            data = base64.b64decode(value, validate=True)
        except ValueError:
            data = None
        if data is not None and len(data) <= MAX_CELL:
            return data
    want = {"integer": "a 64-bit integer", "real": "a finite number", "text": f"text of at most {MAX_CELL} characters",
            "blob": f"base64 text of at most {MAX_CELL} bytes"}.get(kind, kind)
    raise MeshnodeError("bad_value", f"column {column} holds {want} (or null)")


def _quoted(names) -> str:
    """Column names for SQL; only names that passed ``IDENTIFIER`` (via the table's own columns) reach here."""
    return ", ".join(f'"{n}"' for n in names)


def _column_of(columns: dict[str, str], table_name: str, column) -> str:
    if column not in columns:
        raise MeshnodeError("bad_args", f"table {table_name} has no column {str(column)[:60]!r};"
                                        f" its columns: {', '.join(columns)}")
    return columns[column]


def _table_list(db, key, now, args):
    out = []
    for row in rows_of(db.conn.execute("SELECT table_name, description, created_at FROM agent_tables ORDER BY"
                                       " table_name LIMIT ?", (args.get("limit", 20),)), clip=("description",)):
        table = row.pop("table_name")
        name = table[len(TABLE_PREFIX):] if table.startswith(TABLE_PREFIX) else table
        valid = table.startswith(TABLE_PREFIX) and IDENTIFIER.fullmatch(name)  # checked before it reaches SQL
        info = db.conn.execute(f'PRAGMA table_info("{table}")').fetchall() if valid else []
        entry = {"name": name, **row, "columns": {c[1]: c[2].lower() for c in info}}
        if info:
            entry["rows"] = db.conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
        else:
            entry["missing"] = True
        out.append(entry)
    return out


def _table_add(db, key, now, args):
    name, columns = _identifier(args["name"], "table name"), args["columns"]
    if not 1 <= len(columns) <= MAX_COLUMNS:
        raise MeshnodeError("bad_args", f"a table has 1 to {MAX_COLUMNS} columns besides id")
    for column, kind in columns.items():
        if _identifier(column, "column name") == "id":
            raise MeshnodeError("bad_name", "column id is made for every table (INTEGER PRIMARY KEY)")
        if type(kind) is not str or kind not in COLUMN_TYPES:
            raise MeshnodeError("bad_value", f"column {column} type must be one of {', '.join(COLUMN_TYPES)}")
    table = TABLE_PREFIX + name
    sql = (f'CREATE TABLE "{table}" (id INTEGER PRIMARY KEY, '
           + ", ".join(f'"{c}" {COLUMN_TYPES[k]}' for c, k in columns.items()) + ")")
    with db.transaction() as conn:
        taken = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name IN (?, ?)", (name, table))}
        if name in taken or name.startswith("sqlite_"):  # "notes" would read as the node's own table later
            raise MeshnodeError("bad_name", f"{name!r} is the name of a node table; choose another")
        if taken:
            raise MeshnodeError("duplicate", f"agent table {name!r} exists")
        if conn.execute("SELECT count(*) FROM agent_tables").fetchone()[0] >= MAX_TABLES:
            raise MeshnodeError("too_many", f"the agent has {MAX_TABLES} tables already; delete one first")
        conn.execute(sql)
        conn.execute("INSERT INTO agent_tables (table_name, description, schema, created_at) VALUES (?, ?, ?, ?)",
                     (table, args.get("description"), sql, sql_time(now)))
    return {"name": name, "columns": {"id": "integer", **columns}}


def _table_delete(db, key, now, args):
    table = TABLE_PREFIX + _identifier(args["name"], "table name")
    with db.transaction() as conn:
        if conn.execute("SELECT 1 FROM agent_tables WHERE table_name = ?", (table,)).fetchone() is None:
            raise MeshnodeError("not_found", f"no agent table {args['name']!r}; table_list shows them by name")
        conn.execute(f'DROP TABLE IF EXISTS "{table}"')
        conn.execute("DELETE FROM agent_tables WHERE table_name = ?", (table,))
    return {"deleted": args["name"]}


def _table_insert(db, key, now, args):
    table, columns = _agent_table(db, args["name"])
    columns.pop("id", None)
    if not args["row"]:
        raise MeshnodeError("bad_args", f"row names no columns; the columns: {', '.join(columns)}")
    values = {c: _cell(_column_of(columns, args["name"], c), v, c) for c, v in args["row"].items()}
    if sum(len(v) if isinstance(v, (str, bytes)) else 8 for v in values.values()) > MAX_ROW:
        raise MeshnodeError("too_large", f"a row holds at most {MAX_ROW} bytes")
    with db.transaction() as conn:
        if conn.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0] >= MAX_ROWS:
            raise MeshnodeError("too_many", f"table {args['name']} has {MAX_ROWS} rows, the most an agent table"
                                            " holds; delete the table or use another")
        cur = conn.execute(f'INSERT INTO "{table}" ({_quoted(values)})'
                           f' VALUES ({", ".join("?" for _ in values)})', tuple(values.values()))
    return {"id": cur.lastrowid}


def _table_query(db, key, now, args):
    """Long text is clipped when several rows come back; a one-row answer (where {"id": n}) is whole."""
    table, columns = _agent_table(db, args["name"])
    clauses, params = [], []
    for column, value in args.get("where", {}).items():
        kind = _column_of(columns, args["name"], column)
        clauses.append(f'"{column}" IS NULL' if value is None else f'"{column}" = ?')
        params += [] if value is None else [_cell(kind, value, column)]
    sql = (f'SELECT {_quoted(columns)} FROM "{table}"'
           + (" WHERE " + " AND ".join(clauses) if clauses else "") + " ORDER BY id LIMIT ?")
    rows = rows_of(db.conn.execute(sql, (*params, args.get("limit", 20))), decode=())
    for row in rows:
        for column, value in row.items():
            if isinstance(value, bytes):
                row[column] = base64.b64encode(value).decode("ascii")
            if len(rows) > 1:
                row[column] = clip_text(row[column])
    return rows


HANDLERS = {
    "table_list": _table_list,
    "table_add": _table_add,
    "table_delete": _table_delete,
    "table_insert": _table_insert,
    "table_query": _table_query,
}
