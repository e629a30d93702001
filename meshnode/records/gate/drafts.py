"""Drafts: the agent's file changes, held in SQLite until a person commits them.

Each session has at most one open draft per file (pending, accepted or
rejected); its later reads see its pending and accepted drafts. A rejected
draft stays until the next commit, which ends the review round and discards
it (a person can still accept it by name until then; ``accept`` of all open
drafts takes only the pending ones, never what the person rejected). A draft keeps
the hash of the real file when it was first made, so a commit can tell when
the file changed under it (a "conflict") and refuse. A commit takes a
snapshot, writes the accepted drafts all or nothing, and marks them committed
(kept as history). Functions run in the store's worker thread, like the rest
of the store.
"""

from __future__ import annotations

import difflib
import hashlib
import sqlite3
import time

from meshnode.base.errors import GateError
from meshnode.records.gate import snapshots
from meshnode.store.database import Database, sql_errors

MAX_DRAFT_BYTES = 8 * 1024 * 1024
MAX_OPEN_DRAFTS = 256
MAX_SESSION_BYTES = 64 * 1024 * 1024  # all open drafts of a session together
MAX_DIFF_INPUT_BYTES = 1024 * 1024  # larger texts are summarized, not diffed

_COLUMNS = "id, path, base_hash, content, status"


def draft_write(db: Database, jail, session: str, path: str, content: bytes) -> dict:
    """Draft ``content`` as the file's new content."""
    _check_content(content)
    return _save(db, jail, session, jail.resolve(path), bytes(content))


def draft_patch(db: Database, jail, session: str, path: str, search: str, replace: str) -> dict:
    """Replace the one occurrence of ``search`` in the file as this session sees it (UTF-8)."""
    key = jail.resolve(path)
    current = read_through(db, jail, session, key, MAX_DRAFT_BYTES)
    try:
        text = current.decode("utf-8")
    except UnicodeDecodeError:
        raise GateError("not_text", f"{key} is not UTF-8 text; write it whole instead of patching") from None
    if not search:
        raise GateError("patch_ambiguous", "an empty search text matches everywhere")
    found = text.count(search)
    if found == 0:
        raise GateError("patch_no_match", f"the search text does not occur in {key}")
    if found > 1:
        raise GateError("patch_ambiguous", f"the search text occurs {found} times in {key}; include more context")
    new = text.replace(search, replace, 1).encode("utf-8", "surrogatepass")
    _check_content(new)
    return _save(db, jail, session, key, new)


def draft_delete(db: Database, jail, session: str, path: str) -> dict:
    """Draft the file's deletion (it must exist, really or in this session's drafts)."""
    key = jail.resolve(path)
    row = _visible(db, session, key)
    if (row is None and not jail.exists(key)) or (row is not None and row[3] is None):
        raise GateError("not_found", f"{key} does not exist")
    return _save(db, jail, session, key, None)


def read_through(db: Database, jail, session: str, path: str, max_bytes: int) -> bytes:
    """The file as this session sees it: its pending or accepted draft, else the real file."""
    key = jail.resolve(path)
    row = _visible(db, session, key)
    if row is None:
        return jail.read_bytes(key, max_bytes)
    content = row[3]
    if content is None:
        raise GateError("not_found", f"{key} is deleted in this session's drafts")
    if len(content) > max_bytes:
        raise GateError("too_large", f"{key} is larger than {max_bytes} bytes")
    return content


def visible(db: Database, session: str) -> dict[str, bytes | None]:
    """What the session's reads see instead of the real files: path -> drafted content (None: a
    drafted deletion), from its pending and accepted drafts. No diffs, no reads of real files."""
    return {key: content for _, key, _, content, status in _open_rows(db, session)
            if status in ("pending", "accepted")}


def review(db: Database, jail, session: str, *, shown_to_person: bool = False) -> list[dict]:
    """Every open draft of the session: path, status, deleted, diff (against the real file
    now) and conflict (the real file changed since the draft was made). ``shown_to_person``:
    record what was shown, which is what ``decide(..., shown_only=True)`` will accept."""
    out = []
    rows = _open_rows(db, session)
    if shown_to_person:
        with db.transaction() as conn:
            conn.executemany("UPDATE gate_drafts SET shown_sha256 = ? WHERE id = ?",
                             [(_shown_hash(content), draft_id) for draft_id, _, _, content, _ in rows])
    for _, key, base_hash, content, status in rows:
        try:
            conflict = jail.file_hash(key) != base_hash
            diff = _diff_against_real(jail, key, content)
        except GateError as exc:
            conflict, diff = True, f"the real file cannot be read: {exc.reason}"
        out.append({"path": key, "status": status, "deleted": content is None, "diff": diff, "conflict": conflict})
    return out


def decide(db: Database, session: str, path: str, decision: str, *, shown_only: bool = False) -> None:
    """Accept or reject the open draft of ``path`` (a key as review() shows it). ``shown_only``:
    accept only if its content is still what ``review(shown_to_person=True)`` last showed."""
    status = {"accept": "accepted", "reject": "rejected"}.get(decision)
    if status is None:
        raise GateError("bad_decision", f"a decision is 'accept' or 'reject', not {decision!r}")
    if shown_only and status == "accepted":
        row = db.conn.execute("SELECT content, shown_sha256 FROM gate_drafts WHERE session = ? AND path = ?"
                              " AND status != 'committed'", (session, path)).fetchone()
        if row is not None and row[1] != _shown_hash(row[0]):
            raise GateError("not_shown", f"{path} changed since it was last listed (or was never listed);"
                            " look at it again with `meshnode drafts list --diff`")
    with db.transaction() as conn:
        cur = conn.execute("UPDATE gate_drafts SET status = ?, updated_ms = ? WHERE session = ? AND path = ?"
                           " AND status != 'committed'", (status, _now_ms(), session, path))
        if cur.rowcount == 0:
            raise GateError("not_found", f"there is no open draft of {path} in session {session}")


def decide_many(db: Database, jail, session: str, decision: str, paths: list[str] | None) -> dict:
    """A person's decision on ``paths`` (None: every draft it applies to, i.e. the pending ones
    to accept, the pending and accepted ones to reject). Accepting takes only what the person
    was last shown; the others are named in ``changed_since_listed``."""
    if paths is None:
        wanted = ("pending",) if decision == "accept" else ("pending", "accepted")
        keys = [key for _, key, _, _, status in _open_rows(db, session) if status in wanted]
    else:
        keys = [jail.resolve(p) for p in paths]
    done, unseen = [], []
    for key in keys:
        try:
            decide(db, session, key, decision, shown_only=True)
            done.append(key)
        except GateError as exc:
            if exc.code != "not_shown":
                raise
            unseen.append(key)
    return {"decided": done, "changed_since_listed": unseen}


def unshown(db: Database, jail, session: str, paths: list[str] | None) -> list[str]:
    """What an accept of ``paths`` (None: the pending drafts) would not take because its content
    is not what a person was last shown; GateError("not_found") for a named path with no open
    draft. Lets a front end refuse the whole decision before any of it is made."""
    with sql_errors("reading drafts"):
        rows = {key: (content, shown, status) for key, content, shown, status in db.conn.execute(
            "SELECT path, content, shown_sha256, status FROM gate_drafts WHERE session = ? AND status != 'committed'",
            (session,))}
    if paths is None:
        keys = [key for key, (_, _, status) in rows.items() if status == "pending"]
    else:
        keys = [jail.resolve(p) for p in paths]
    missing = [key for key in keys if key not in rows]
    if missing:
        raise GateError("not_found", f"there is no open draft of {', '.join(missing)} in session {session}")
    return sorted(key for key in keys if rows[key][1] != _shown_hash(rows[key][0]))


def listing(db: Database, jail, session: str, *, rejected: bool = False) -> dict:
    """What a person reviews (``meshnode drafts list``): the open drafts (recorded as shown), the
    rejected ones only with ``rejected`` (else counted), and the agent's last submission while
    drafts it submitted are still open."""
    rows = review(db, jail, session, shown_to_person=True)
    shown = [r for r in rows if rejected or r["status"] != "rejected"]
    return {"drafts": shown, "rejected_hidden": len(rows) - len(shown), "submission": open_submission(db, session)}


def open_submission(db: Database, session: str) -> dict | None:
    """The agent's last submission, while one of the drafts it submitted is still open (pending
    or accepted, made no later than it); None once they are committed or rejected."""
    with sql_errors("reading submissions"):
        row = db.conn.execute("SELECT summary, reflection, ready, drafts, created_ms FROM gate_submissions"
                              " WHERE session = ? ORDER BY id DESC LIMIT 1", (session,)).fetchone()
        if row is None:
            return None
        submitted = dict(zip(("summary", "reflection", "ready", "drafts", "created_ms"), row))
        (still_open,) = db.conn.execute(
            "SELECT count(*) FROM gate_drafts AS d, json_each(?) AS s WHERE d.session = ? AND d.path = s.value AND"
            " d.status IN ('pending', 'accepted') AND d.created_ms <= ?", (submitted["drafts"], session, submitted["created_ms"])
        ).fetchone()
    return submitted if still_open else None


def edit(db: Database, jail, session: str, path: str, content: bytes) -> dict:
    """A person's new content for an open draft. The status stays as it was: an edit is
    not an acceptance."""
    _check_content(content)
    key = jail.resolve(path)
    with db.transaction() as conn:
        cur = conn.execute("UPDATE gate_drafts SET content = ?, shown_sha256 = ?, updated_ms = ? WHERE session = ?"
                           " AND path = ? AND status != 'committed'",  # the person wrote it: they have seen it
                           (bytes(content), _shown_hash(bytes(content)), _now_ms(), session, key))
        if cur.rowcount == 0:
            raise GateError("not_found", f"there is no open draft of {key} in session {session}")
        return _summary(session, _open_row(conn, session, key))


def commit(db: Database, jail, session: str, reason: str) -> int:
    """Write the session's accepted drafts, all or nothing; returns the snapshot id. The
    rejected drafts are discarded with it (``discard_rejected``): the review round is over.

    Refused as a whole ("conflict") when any of their files changed since it was
    drafted. The snapshot (current contents, the session's draft state) is taken
    first, and forgotten again if the write fails. If the process dies after the
    write but before the drafts are marked committed, they stay accepted and a
    second commit reports them as conflicts (their base changed), never writes twice.
    """
    rows = [r for r in _open_rows(db, session) if r[4] == "accepted"]
    if not rows:
        gone = discard_rejected(db, session)
        raise GateError("nothing_to_commit", f"session {session} has no accepted drafts"
                        + (f" (its {len(gone)} rejected draft(s) were discarded)" if gone else ""))
    conflicts = [key for _, key, base_hash, _, _ in rows if jail.file_hash(key) != base_hash]
    if conflicts:
        raise GateError("conflict", "changed since they were drafted, nothing was written: " + ", ".join(conflicts))
    snapshot_id = snapshots.create(db, jail, [r[1] for r in rows], _session_state(db, session), reason)
    try:
        jail.write_atomically({key: content for _, key, _, content, _ in rows},
                              expected_hashes={key: base_hash for _, key, base_hash, _, _ in rows})
    except BaseException:
        snapshots.discard(db, snapshot_id)
        raise
    with db.transaction() as conn:
        conn.executemany("UPDATE gate_drafts SET status = 'committed', snapshot_id = ?, updated_ms = ? WHERE id = ?",
                         [(snapshot_id, _now_ms(), r[0]) for r in rows])
    discard_rejected(db, session)
    return snapshot_id


def discard_rejected(db: Database, session: str) -> list[str]:
    """Forget the session's rejected drafts (their paths). The agent learnt of the rejection
    when it was made; a later draft of the same file starts afresh."""
    with db.transaction() as conn:
        paths = [r[0] for r in conn.execute("SELECT path FROM gate_drafts WHERE session = ? AND status = 'rejected'"
                                            " ORDER BY path", (session,))]
        conn.execute("DELETE FROM gate_drafts WHERE session = ? AND status = 'rejected'", (session,))
    return paths


# --- rows -----------------------------------------------------------------


def _save(db: Database, jail, session: str, key: str, content: bytes | None) -> dict:
    """Create or update the open draft of ``key``; a new draft records the real file's hash."""
    _check_session(session)
    base_hash = jail.file_hash(key) if _open_row(db.conn, session, key) is None else None
    now = _now_ms()
    with db.transaction() as conn:
        row = _open_row(conn, session, key)
        (held,) = conn.execute("SELECT coalesce(sum(length(content)), 0) FROM gate_drafts WHERE session = ? AND"
                               " status IN ('pending', 'accepted') AND path != ?", (session, key)).fetchone()
        if held + len(content or b"") > MAX_SESSION_BYTES:
            raise GateError("too_large", f"session {session}'s open drafts would hold more than"
                            f" {MAX_SESSION_BYTES >> 20} MiB; commit or reject some first")
        if row is None:
            (count,) = conn.execute("SELECT count(*) FROM gate_drafts WHERE session = ? AND status IN"
                                    " ('pending', 'accepted')", (session,)).fetchone()
            if count >= MAX_OPEN_DRAFTS:
                raise GateError("too_many", f"session {session} already has {count} open drafts")
            conn.execute("INSERT INTO gate_drafts (session, path, base_hash, content, status, created_ms, updated_ms)"
                         " VALUES (?, ?, ?, ?, 'pending', ?, ?)", (session, key, base_hash, content, now, now))
        else:
            conn.execute("UPDATE gate_drafts SET content = ?, status = 'pending', updated_ms = ? WHERE id = ?",
                         (content, now, row[0]))
        return _summary(session, _open_row(conn, session, key))


def _open_row(conn: sqlite3.Connection, session: str, key: str) -> tuple | None:
    with sql_errors("reading drafts"):
        return conn.execute(f"SELECT {_COLUMNS} FROM gate_drafts WHERE session = ? AND path = ?"
                            " AND status != 'committed'", (session, key)).fetchone()


def _visible(db: Database, session: str, key: str) -> tuple | None:
    row = _open_row(db.conn, session, key)
    return row if row is not None and row[4] in ("pending", "accepted") else None


def _open_rows(db: Database, session: str) -> list[tuple]:
    with sql_errors("reading drafts"):
        return db.conn.execute(f"SELECT {_COLUMNS} FROM gate_drafts WHERE session = ? AND status != 'committed'"
                               " ORDER BY path", (session,)).fetchall()


def _summary(session: str, row: tuple) -> dict:
    _, key, base_hash, content, status = row
    return {"session": session, "path": key, "status": status, "deleted": content is None,
            "size": None if content is None else len(content), "base_hash": base_hash,
            "new_file": base_hash is None}


def _shown_hash(content: bytes | None) -> str:
    return "deleted" if content is None else hashlib.sha256(content).hexdigest()


def _session_state(db: Database, session: str) -> dict:
    """What a commit's snapshot records of the session: its open drafts, without contents, and
    where the agent's thinking stood (its latest answers), so a rollback can say from when."""
    with sql_errors("reading the agent's answers"):
        recent = db.conn.execute("SELECT id, substr(content, 1, 200) FROM llm_recent_responses WHERE role ="
                                 " 'assistant' ORDER BY id DESC LIMIT 5").fetchall()
    return {"session": session, "messages": [{"id": i, "start": text} for i, text in recent], "drafts": [
        {"path": key, "status": status, "base_hash": base_hash, "deleted": content is None,
         "sha256": _hash(content)} for _, key, base_hash, content, status in _open_rows(db, session)]}


# --- checks and diffs -----------------------------------------------------


def _check_session(session: str) -> None:
    if not isinstance(session, str) or not session:
        raise GateError("bad_session", "a session id is non-empty text")


def _check_content(content: bytes) -> None:
    if not isinstance(content, (bytes, bytearray)):
        raise GateError("bad_content", f"draft content is bytes, not {type(content).__name__}")
    if len(content) > MAX_DRAFT_BYTES:
        raise GateError("too_large", f"a draft is at most {MAX_DRAFT_BYTES} bytes (this one has {len(content)})")


def _diff_against_real(jail, key: str, new: bytes | None) -> str:
    try:
        real = jail.read_bytes(key, MAX_DIFF_INPUT_BYTES)
    except GateError as exc:
        if exc.code == "too_large":
            return f"not shown: the real file is larger than {MAX_DIFF_INPUT_BYTES} bytes"
        if exc.code != "not_found":
            raise
        real = None
    return _diff(key, real, new)


def _diff(key: str, old: bytes | None, new: bytes | None) -> str:
    """A unified diff of two texts, or a one-line summary for binary or large content."""
    old_text, new_text = _as_text(old), _as_text(new)
    if old_text is None or new_text is None:
        return f"binary, {_size(old)} -> {_size(new)}"
    lines = difflib.unified_diff(old_text.splitlines(keepends=True), new_text.splitlines(keepends=True),
                                 fromfile="/dev/null" if old is None else f"a/{key}",
                                 tofile="/dev/null" if new is None else f"b/{key}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def _as_text(content: bytes | None) -> str | None:
    if content is None:
        return ""
    if len(content) > MAX_DIFF_INPUT_BYTES:
        return None
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _size(content: bytes | None) -> str:
    return "absent" if content is None else f"{len(content)} bytes"


def _hash(content: bytes | None) -> str | None:
    return None if content is None else hashlib.sha256(content).hexdigest()


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
