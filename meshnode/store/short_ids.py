"""Short ids: what a person reads in a listing and types back instead of a whole DID.

A container DID is ``did:hmp:container:uEi`` + 44 characters of base64url; the
three characters after the prefix are the same for every container (multibase
``u``, the SHA-256 multihash header), so the short id is the next
``SHORT_LEN`` characters. An agent's ``did:key:z6Mk...`` likewise shortens to
``key:`` and the characters after the Ed25519 header. Every command that takes
a DID resolves what it was given with ``resolve_container`` / ``resolve_agent``:
a whole DID passes as it is (held here or not: the caller decides what a
dangling one means; an agent's must hold an Ed25519 key); a short id or any
longer prefix must match exactly one. An agent may also be named by the
person's petname for it or the name it announced (store/names.py shows them).
"""

from __future__ import annotations

import re

from meshnode.base.errors import IdentityError, MeshnodeError
from meshnode.base.identity.did import public_key_from_did
from meshnode.store.database import Database, sql_errors

CONTAINER_PREFIX = "did:hmp:container:"
CONTAINER_HEAD = CONTAINER_PREFIX + "uEi"
AGENT_PREFIX = "did:key:"
AGENT_HEAD = AGENT_PREFIX + "z6Mk"
SHORT_LEN = 10
MIN_SHORT = 6  # a prefix shorter than this matches too much to be meant
MAX_CANDIDATES = 5  # the agents an ambiguous name's refusal lists
_B64URL = re.compile(r"[A-Za-z0-9_-]+")
_B58 = re.compile(r"[1-9A-HJ-NP-Za-km-z]+")
AGENT_DID = re.compile(r"did:key:z[1-9A-HJ-NP-Za-km-z]{20,80}")  # an agent's DID inside a text
CONTAINER_DID = re.compile(r"did:hmp:container:[A-Za-z0-9_-]{20,80}")  # a container's DID inside a text
_SHOWN = re.compile(r".+ \((key:[1-9A-HJ-NP-Za-km-z]+)\)")


class ShortIdError(MeshnodeError):
    """A short id that names nothing here, or more than one thing."""


def short_container_id(did: str) -> str:
    return did[len(CONTAINER_HEAD):][:SHORT_LEN] if did.startswith(CONTAINER_HEAD) else did


def short_agent_id(did: str) -> str:
    return "key:" + did[len(AGENT_HEAD):][:SHORT_LEN - 2] if did.startswith(AGENT_HEAD) else did


def is_whole(text: str) -> bool:
    """A whole DID (nothing to look up), of a container or an agent."""
    text = text.strip()
    return text.startswith(AGENT_PREFIX) or text.startswith(CONTAINER_PREFIX) and len(text) >= len(CONTAINER_HEAD) + 44


def resolve_container(db: Database | None, text: str, noun: str = "container") -> str:
    """The whole container DID that ``text`` names: the DID itself, or a unique prefix of
    one held here (the short id a listing shows, with or without ``did:hmp:container:uEi``)."""
    text = text.strip()
    if text.startswith(CONTAINER_PREFIX) and is_whole(text):
        return text
    body = text[len(CONTAINER_HEAD):] if text.startswith(CONTAINER_HEAD) else text
    if text.startswith("did:") and not text.startswith(CONTAINER_HEAD) or not _B64URL.fullmatch(body or "-") \
            or len(body) < MIN_SHORT:
        raise ShortIdError("bad_id", f"{text!r} names no {noun}: it is not a DID (did:hmp:container:...) nor the"
                                     f" short id a listing shows ({MIN_SHORT} characters or more)")
    with sql_errors("resolving a short id"):
        rows = db.conn.execute("SELECT did FROM containers WHERE did GLOB ? LIMIT 2",
                               (CONTAINER_HEAD + body + "*",)).fetchall()
    return _one(rows, text, noun)


def resolve_agent(db: Database | None, text: str) -> str:
    """The whole agent DID that ``text`` names: the DID itself, the person's petname for one (whatever
    its case), a name one announced (or this node's own), or a unique short id (``key:...``) of an
    agent known here. A name or short id several agents go by is refused with the candidates."""
    text = text.strip()
    if text.startswith(AGENT_PREFIX):
        try:
            public_key_from_did(text)
        except IdentityError as exc:
            reason = exc.reason.removesuffix(f": {text!r}")  # the DID is named once
            raise ShortIdError("bad_id", f"{text[:80]!r} is not an agent's DID: {reason}") from None
        return text
    if text.startswith("did:"):
        raise ShortIdError("bad_id", f"{text!r} is not an agent's DID (did:key:...)")
    shown = _SHOWN.fullmatch(text)  # "bob (key:AbCd1234)": a name several agents have, as a listing shows it
    if shown:
        text = shown.group(1)
    with sql_errors("resolving an agent"):
        rows = db.conn.execute("SELECT did FROM petnames WHERE petname = ?", (text,)).fetchall()
        if rows:
            return rows[0][0]
        rows = db.conn.execute("SELECT id, id IN (SELECT did FROM petnames) FROM (SELECT id FROM agent_peers WHERE"
                               " name = ? COLLATE NOCASE UNION SELECT id FROM identity WHERE name = ? COLLATE NOCASE)"
                               " LIMIT 1000", (text, text)).fetchall()
        if rows:  # the announced name of an agent the person renamed counts only when no other has it
            plain = [r for r in rows if not r[1]]
            return _one((plain or rows)[:MAX_CANDIDATES + 1], text, "agent")
        body = text[4:] if text.startswith("key:") else text
        if not _B58.fullmatch(body or "0") or len(body) < MIN_SHORT:
            raise ShortIdError("bad_id", f"{text!r} names no agent: it is not a DID (did:key:...), a petname, a known name,"
                               " nor the short id a listing shows (key:...)")
        pattern = AGENT_HEAD + body + "*"
        rows = db.conn.execute("SELECT id FROM agent_peers WHERE id GLOB ? UNION SELECT id FROM identity WHERE id GLOB ?"
                               " UNION SELECT did FROM petnames WHERE did GLOB ? LIMIT ?",
                               (pattern, pattern, pattern, MAX_CANDIDATES + 1)).fetchall()
    return _one(rows, text, "agent")


def _one(rows: list, text: str, noun: str) -> str:
    if not rows:
        kind = "a DID, nor the petname, name or short id" if noun == "agent" else "a DID, nor the short id"
        raise ShortIdError("not_found", f"{text!r} names no {noun}: it is not {kind} of one known here")
    if len(rows) > 1:
        if noun != "agent":
            raise ShortIdError("ambiguous_id", f"{text!r} names more than one {noun}; give more characters")
        shown = ", ".join(short_agent_id(r[0]) for r in rows[:MAX_CANDIDATES])
        more = " and more" if len(rows) > MAX_CANDIDATES else ""
        raise ShortIdError("ambiguous_id", f"{text!r} names {len(rows) if not more else 'several'} agents: {shown}{more};"
                                           " give one of these short ids, or a petname (meshnode name set KEY NAME)")
    return rows[0][0]
