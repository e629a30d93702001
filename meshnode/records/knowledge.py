"""CogSync knowledge and notes as this node reads them from its store: lists, a note shown or
read, tags, references a person typed, search. Each takes a ``Database``; the app's actions
call them (meshnode.app.actions.knowledge, notes). The builders are meshnode.domain.knowledge.
"""

from __future__ import annotations

import json

from meshnode.base.errors import MeshnodeError
from meshnode.domain.knowledge import KnowledgeError
from meshnode.store import short_ids
from meshnode.store.database import Database, like_pattern, sql_errors

MAX_LIST = 10_000


# --- references ------------------------------------------------------------------

CLASS_NOUNS = {"diary_entry": "diary entry", "semantic_node": "concept", "semantic_edges": "link", "note": "note"}


def reference_problem(db: Database, did: str, cls: str) -> str | None:
    """Why ``did`` is not a held container of class ``cls`` (None when it is one)."""
    with sql_errors("looking up a reference"):
        row = db.conn.execute("SELECT class FROM containers WHERE did = ?", (did,)).fetchone()
    if row is None:
        return "no such container on this node"
    if row[0] != cls:
        return f"is a {CLASS_NOUNS.get(row[0], row[0])}, not a {CLASS_NOUNS.get(cls, cls)}"
    return None


def resolve_reference(db: Database, text: str, cls: str, *, what: str, allow_dangling: bool = False,
                      option: str = "allow_dangling") -> str:
    """The whole container DID that ``text`` (a DID or a short id) names as a ``cls`` reference;
    refused (unless ``allow_dangling``) when this node does not hold it or it is of another class:
    a version of nothing, or a link to nothing, is almost always a typo. ``what``: the argument as
    the person typed it, and ``option`` the way to allow a dangling one, for the reason."""
    try:
        did = short_ids.resolve_container(db, text, CLASS_NOUNS[cls])
    except MeshnodeError as exc:
        raise KnowledgeError(exc.code, f"{what}: {exc.reason}") from None
    problem = reference_problem(db, did, cls)
    if problem and not allow_dangling:
        raise KnowledgeError("dangling_reference", f"{what} {did}: {problem} ({option} refers to it anyway)")
    return did


# --- reading ---------------------------------------------------------------------

_LISTS = {
    "diary": "SELECT lineage, container_did, author_did, text, tags, forks, timestamp FROM diary_entries"
             " WHERE lineage IS NOT NULL ORDER BY timestamp DESC, id DESC LIMIT ?",
    "concepts": "SELECT lineage, container_did, author_did, name, description, aliases, tags, forks, timestamp"
                " FROM concepts WHERE lineage IS NOT NULL ORDER BY timestamp DESC, id DESC LIMIT ?",
    "links": "SELECT l.lineage, l.container_did, l.author_did, l.from_did, f.name AS from_name, l.relation_type,"
             " l.to_did, t.name AS to_name, l.domain, l.timestamp FROM links l"
             " LEFT JOIN concepts f ON f.id = l.from_concept_id LEFT JOIN concepts t ON t.id = l.to_concept_id"
             " WHERE l.lineage IS NOT NULL ORDER BY l.timestamp DESC, l.id DESC LIMIT ?",
}


def listing(db: Database, kind: str, limit: int = 50) -> list[dict]:
    """The newest rows of a knowledge view: ``diary``, ``concepts`` or ``links``."""
    if kind not in _LISTS:
        raise KnowledgeError("bad_request", f"no list {kind!r}; one of {', '.join(_LISTS)}")
    with sql_errors(f"listing {kind}"):
        cur = db.conn.execute(_LISTS[kind], (max(1, min(int(limit), MAX_LIST)),))
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, row)) for row in cur.fetchall()]
    for r in rows:  # JSON columns as lists, not JSON text inside JSON
        for key in ("tags", "aliases"):
            if key in r:
                r[key] = json.loads(r[key]) if r[key] else []
    return rows


# --- notes: the local side (read marks, the person's own tags) -------------------------


_NOTE_FIELDS = ("SELECT container_did, agent_did, timestamp, topic, text, code, mentions, hashtags, source, priority,"
                " audience, forward, tags, read, hidden FROM notes WHERE container_did = ?")


def _note(conn, container_did: str) -> dict:
    cur = conn.execute(_NOTE_FIELDS, (container_did,))
    row = cur.fetchone()
    if row is None:
        raise KnowledgeError("not_found", f"no note {container_did} on this node")
    note = dict(zip([d[0] for d in cur.description], row))
    for key in ("mentions", "hashtags", "tags"):
        note[key] = json.loads(note[key]) if note[key] else []
    note["read"], note["hidden"] = bool(note["read"]), bool(note["hidden"])
    return note


def show_note(db: Database, container_did: str) -> dict:
    """The note in full, as it is: looking at it (a page, ``note show``) does not mark it read."""
    with sql_errors("reading a note"):
        return _note(db.conn, container_did)


def read_note(db: Database, container_did: str) -> dict:
    """The note in full, marked read (it is returned as it was before: ``read`` says whether it
    had been read already)."""
    with db.transaction() as conn:
        note = _note(conn, container_did)
        conn.execute("UPDATE notes SET read = 1 WHERE container_did = ?", (container_did,))
    return note


def tag_note(db: Database, container_did: str, add: list[str], remove: list[str]) -> list[str]:
    """Change the note's local tags (never signed, never forwarded); returns them."""
    if any(not 0 < len(t) <= 64 for t in add):
        raise KnowledgeError("bad_tag", "a tag is 1 to 64 characters")
    with db.transaction() as conn:
        row = conn.execute("SELECT tags FROM notes WHERE container_did = ?", (container_did,)).fetchone()
        if row is None:
            raise KnowledgeError("not_found", f"no note {container_did} on this node")
        tags = sorted((set(json.loads(row[0]) if row[0] else []) | set(add)) - set(remove))
        conn.execute("UPDATE notes SET tags = ? WHERE container_did = ?", (json.dumps(tags), container_did))
    return tags


# --- search ----------------------------------------------------------------------

SEARCH_KINDS = ("notes", "diary", "concepts")
MAX_SEARCH = 500
MAX_QUERY = 256

_SEARCH = {  # each: (kind, did, timestamp, text, author_did, extra...) where the text matches, newest first
    "notes": "SELECT 'note', container_did, timestamp, text, agent_did, topic, source, read FROM notes"
             " WHERE hidden = 0 AND (text LIKE :q ESCAPE '\\' OR topic LIKE :q ESCAPE '\\')"
             " ORDER BY timestamp DESC, id DESC LIMIT :n",
    "diary": "SELECT 'diary', container_did, timestamp, text, author_did, tags FROM diary_entries"
             " WHERE lineage IS NOT NULL AND text LIKE :q ESCAPE '\\' ORDER BY timestamp DESC, id DESC LIMIT :n",
    # aliases one by one, not LIKE on their JSON text (which escapes non-ASCII)
    "concepts": "SELECT 'concept', container_did, timestamp, name, author_did, description, aliases FROM concepts"
                " WHERE lineage IS NOT NULL AND (name LIKE :q ESCAPE '\\'"
                " OR EXISTS (SELECT 1 FROM json_each(aliases) WHERE value LIKE :q ESCAPE '\\'))"
                " ORDER BY timestamp DESC, id DESC LIMIT :n",
}
_EXTRA = {"note": ("topic", "source", "read"), "diary": ("tags",), "concept": ("description", "aliases")}


def search(db: Database, q: str, kinds: list[str] | tuple[str, ...] | None = None, limit: int = 50) -> list[dict]:
    """Notes (text, topic), diary entries (text) and concepts (label, aliases) containing ``q``,
    newest first, at most ``limit`` in all: ``[{kind, did, timestamp, text, author_did, ...}]``
    (``kind``: note, diary or concept; ``text``: a concept's label). A substring match (LIKE,
    case-insensitive for ASCII; ``%`` and ``_`` are plain characters): a scan, measured fast
    enough at 100,000 notes (protocols/web.md, open question 6)."""
    if not isinstance(q, str) or not q.strip() or len(q) > MAX_QUERY:
        raise KnowledgeError("bad_query", f"search for 1 to {MAX_QUERY} characters, not blank")
    kinds = list(kinds or SEARCH_KINDS)
    unknown = [k for k in kinds if k not in SEARCH_KINDS]
    if unknown:
        raise KnowledgeError("bad_kind", f"no kind {unknown[0][:40]!r} to search; any of {', '.join(SEARCH_KINDS)}")
    n = max(1, min(int(limit), MAX_SEARCH))
    found = []
    with sql_errors("searching"):
        for kind in SEARCH_KINDS:
            if kind in kinds:
                found += db.conn.execute(_SEARCH[kind], {"q": like_pattern(q.strip()), "n": n}).fetchall()
    found.sort(key=lambda r: r[2] or "", reverse=True)
    rows = []
    for kind, did, timestamp, text, author, *extra in found[:n]:
        row = {"kind": kind, "did": did, "timestamp": timestamp, "text": text, "author_did": author,
               **dict(zip(_EXTRA[kind], extra))}
        for key in ("tags", "aliases"):
            if key in row:
                row[key] = json.loads(row[key]) if row[key] else []
        if "read" in row:
            row["read"] = bool(row["read"])
        rows.append(row)
    return rows
