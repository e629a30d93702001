"""What the pages need to read a row as a person reads it (issue 34, "pages made for reading"),
added to what the actions return: who wrote it in words (``author``: the person, the agent, a peer
by name, an A2A party — store.speakers through app.actor's ``described``), its time as milliseconds
(``at_ms``: the page shows it in the reader's zone, never the stored UTC text) and its Markdown as
sanitized HTML (``html``, markdown.py). The DIDs stay in their own fields for a detail fold."""

from __future__ import annotations

from datetime import datetime

from meshnode.app.actor import described
from meshnode.faces.web.markdown import to_html

MAX_PROVENANCE = 500  # containers looked up in one read


def at_ms(stamp) -> int | None:
    """An RFC 3339 time ("2026-12-07T10:11:48.175Z") as ms since 1970; None when it is not one."""
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        return int(stamp)
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def author(kind: str | None, via: str | None, label: str | None, actor_id: str | None,
           author_did: str | None, author_name: str | None, own_did: str | None) -> tuple[str, str]:
    """(kind, words): who wrote a row, by its provenance record; with none, a peer by its name, this
    node's own as "this node" (never the node's name, which reads as a person's)."""
    if kind and kind != "peer":
        return kind, described(kind, via, label, actor_id)
    if author_did and author_did != own_did:
        return "peer", f"peer {author_name}" if author_name else "a peer"
    if kind == "peer":
        return "peer", described("peer", via, label, actor_id)
    return "node", "this node"


def note(row: dict, own_did: str | None) -> dict:
    """A note row (Database.recent_notes, note_show) with ``author``, ``author_kind``, ``at_ms`` and ``html``."""
    kind, words = author(row.get("asked_kind"), row.get("asked_via"), row.get("asked_label"), row.get("asked_id"),
                         row.get("author_did"), row.get("author_name"), own_did)
    return {**row, "author": words, "author_kind": kind, "at_ms": at_ms(row.get("timestamp")),
            "html": to_html(row.get("text"))}


def provenance(db, dids: list[str]) -> dict[str, tuple]:
    """container DID -> (kind, via, label, actor_id) of its provenance row (those that have one)."""
    dids = [d for d in dict.fromkeys(dids) if isinstance(d, str)][:MAX_PROVENANCE]
    if not dids:
        return {}
    marks = ",".join("?" * len(dids))
    return {d: rest for d, *rest in db.conn.execute(
        f"SELECT container_did, kind, via, label, actor_id FROM provenance WHERE container_did IN ({marks})", dids)}


def written(rows: list[dict], own_did: str | None, found: dict[str, tuple], *, did_key: str = "container_did",
            author_key: str = "author_did", name_key: str | None = None, text_key: str = "text",
            time_key: str = "timestamp") -> list[dict]:
    """Rows (diary entries, goals, tasks...) with ``author``, ``author_kind``, ``at_ms`` and ``html``
    (of ``text_key``), their provenance rows ``found`` (``provenance``)."""
    out = []
    for r in rows:
        kind, via, label, actor_id = found.get(r.get(did_key)) or (None, None, None, None)
        who_kind, words = author(kind, via, label, actor_id, r.get(author_key),
                                 r.get(name_key) if name_key else None, own_did)
        out.append({**r, "author": words, "author_kind": who_kind, "at_ms": at_ms(r.get(time_key)),
                    "html": to_html(r.get(text_key))})
    return out
