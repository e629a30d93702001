"""Snapshots: the contents (or absence) of some files and the agent's state at a moment.

A commit of drafts takes one first, and so does every rollback, so a rollback
can itself be rolled back. Contents are stored whole in SQLite, which is why a
snapshot is capped (64 MiB in all).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable

from meshnode.base.errors import GateError
from meshnode.store.database import Database, sql_errors

MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024


def create(db: Database, jail, paths: Iterable[str], state: dict, reason: str, *,
           restored_from: int | None = None) -> int:
    """Record the current contents of ``paths`` (absent files as absent) and ``state``;
    returns the snapshot's id."""
    snapshot_id, _ = _take(db, jail, paths, state, reason, restored_from)
    return snapshot_id


def listing(db: Database, limit: int = 50) -> list[dict]:
    """The newest snapshots first: id, time (ms since the epoch), reason, paths, restored_from."""
    with sql_errors("reading snapshots"):
        rows = db.conn.execute("SELECT id, created_ms, reason, restored_from FROM gate_snapshots"
                               " ORDER BY id DESC LIMIT ?", (max(1, min(limit, 10_000)),)).fetchall()
        out = []
        for snapshot_id, created_ms, reason, restored_from in rows:
            paths = [p for (p,) in db.conn.execute(
                "SELECT path FROM gate_snapshot_files WHERE snapshot_id = ? ORDER BY path", (snapshot_id,))]
            out.append({"id": snapshot_id, "time": created_ms, "reason": reason, "paths": paths,
                        "restored_from": restored_from})
    return out


def show(db: Database, snapshot_id: int) -> dict:
    """One snapshot: id, time, reason, state, restored_from, and files (path, exists, size, sha256)."""
    with sql_errors("reading a snapshot"):
        row = db.conn.execute("SELECT created_ms, reason, state, restored_from FROM gate_snapshots WHERE id = ?",
                              (snapshot_id,)).fetchone()
        if row is None:
            raise GateError("not_found", f"there is no snapshot {snapshot_id}")
        files = db.conn.execute("SELECT path, length(content), sha256 FROM gate_snapshot_files"
                                " WHERE snapshot_id = ? ORDER BY path", (snapshot_id,)).fetchall()
    created_ms, reason, state, restored_from = row
    return {"id": snapshot_id, "time": created_ms, "reason": reason, "state": json.loads(state),
            "restored_from": restored_from,
            "files": [{"path": p, "exists": h is not None, "size": size, "sha256": h} for p, size, h in files]}


def file_contents(db: Database, snapshot_id: int) -> dict[str, bytes | None]:
    """path -> the content recorded (None: the file did not exist)."""
    with sql_errors("reading a snapshot"):
        if db.conn.execute("SELECT 1 FROM gate_snapshots WHERE id = ?", (snapshot_id,)).fetchone() is None:
            raise GateError("not_found", f"there is no snapshot {snapshot_id}")
        rows = db.conn.execute("SELECT path, content FROM gate_snapshot_files WHERE snapshot_id = ?",
                               (snapshot_id,)).fetchall()
    return {path: content for path, content in rows}


def restore(db: Database, jail, snapshot_id: int, *, state: dict | None = None) -> int:
    """Roll the snapshot's files back to its contents (absent ones are deleted), all or
    nothing. A new snapshot of their current contents is taken first, so the rollback can
    be rolled back; its id is returned. ``state`` is recorded in that new snapshot."""
    contents = file_contents(db, snapshot_id)
    new_id, hashes = _take(db, jail, contents, state if state is not None else {"restoring": snapshot_id},
                           f"before restoring snapshot {snapshot_id}", snapshot_id)
    try:
        # Compare-and-swap against what was just recorded: a file changed since is not lost.
        jail.write_atomically(contents, expected_hashes=hashes)
    except BaseException:
        discard(db, new_id)
        raise
    return new_id


def discard(db: Database, snapshot_id: int) -> None:
    """Forget a snapshot whose change did not happen after all."""
    with db.transaction() as conn:
        conn.execute("DELETE FROM gate_snapshots WHERE id = ?", (snapshot_id,))


def _take(db: Database, jail, paths: Iterable[str], state: dict, reason: str,
          restored_from: int | None) -> tuple[int, dict[str, str | None]]:
    """Record a snapshot; returns its id and path -> sha256 (None: absent) of what it holds."""
    try:
        state_json = json.dumps(state, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise GateError("bad_state", f"the agent state cannot be stored as JSON: {exc}") from None
    budget = MAX_SNAPSHOT_BYTES - len(state_json.encode("utf-8", "surrogatepass"))
    if budget < 0:
        raise _too_large("the agent state")
    files: dict[str, bytes | None] = {}
    for key in sorted({jail.resolve(p) for p in paths}):
        content = _read_or_none(jail, key, budget)
        budget -= 0 if content is None else len(content)
        files[key] = content
    hashes = {key: None if c is None else hashlib.sha256(c).hexdigest() for key, c in files.items()}
    with db.transaction() as conn:
        cur = conn.execute("INSERT INTO gate_snapshots (created_ms, reason, state, restored_from)"
                           " VALUES (?, ?, ?, ?)", (time.time_ns() // 1_000_000, reason, state_json, restored_from))
        snapshot_id = cur.lastrowid
        conn.executemany("INSERT INTO gate_snapshot_files (snapshot_id, path, content, sha256) VALUES (?, ?, ?, ?)",
                         [(snapshot_id, key, c, hashes[key]) for key, c in files.items()])
    return snapshot_id, hashes


def _read_or_none(jail, key: str, budget: int) -> bytes | None:
    try:
        return jail.read_bytes(key, max(0, budget))
    except GateError as exc:
        if exc.code == "not_found":
            return None
        if exc.code == "too_large":
            raise _too_large(key) from None
        raise


def _too_large(what: str) -> GateError:
    return GateError("too_large", f"the snapshot would be larger than {MAX_SNAPSHOT_BYTES} bytes (at {what})")
