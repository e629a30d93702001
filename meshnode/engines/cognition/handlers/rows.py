"""Rows of the agent's tables as command results: read, clipped, decoded; stored times; deletes by id."""

from __future__ import annotations

import json
import time

from meshnode.base.errors import MeshnodeError

CLIP = 500  # long text in listings is cut to this many characters


def clip_text(value, limit: int = CLIP):
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + f"... [{len(value)} characters]"
    return value


def json_of(value):
    """A stored JSON text decoded; the text itself when it is not JSON."""
    try:
        return json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return value


def rows_of(cur, clip: tuple[str, ...] = (), decode: tuple[str, ...] = ("tags",)) -> list[dict]:
    names = [d[0] for d in cur.description]
    out = []
    for r in cur.fetchall():
        row = dict(zip(names, r))
        for k in decode:
            if k in row:
                row[k] = json_of(row[k])
        for k in clip:
            row[k] = clip_text(row[k])
        out.append(row)
    return out


def one(cur, what: str, ident) -> dict:
    rows = rows_of(cur)
    if not rows:
        raise MeshnodeError("not_found", f"no {what} {ident}")
    return rows[0]


def sql_time(now_ms: int) -> str:
    """The form CURRENT_TIMESTAMP writes, so stored times sort together."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(now_ms / 1000))


def tags_json(args: dict) -> str | None:
    return json.dumps(args["tags"]) if "tags" in args else None


def delete(db, table: str, what: str, ident) -> dict:
    """``table`` is always a literal from a handler module, never the LLM's text."""
    with db.transaction() as conn:
        if conn.execute(f"DELETE FROM {table} WHERE id = ?", (ident,)).rowcount == 0:
            raise MeshnodeError("not_found", f"no {what} {ident}")
    return {"deleted": ident}
