"""What an agent is called here: the one place a DID becomes the name a person reads.

Three sources, in this order: the person's **petname** for it (table ``petnames``, set on this node
only and never sent), the name it **announced** (``agent_peers.name``, or ``identity.name`` for this
node itself), and its **short id** (``key:`` and 8 characters, ``short_ids.short_agent_id``) when it
has neither. An announced name is the peer's own claim: it is cleaned (``speakers.clean``), ignored
when it looks like a DID or a short id, and shown with the short id after it when another agent
here goes by the same name (a petname, or the announced name of an agent the person has not
renamed; whatever the case), so two "bob"s never look like one, and a name shown bare is one the
resolver reads back as that agent. ``display`` is what every face prints; the resolver that reads names back is
``short_ids.resolve_agent``.
"""

from __future__ import annotations

from dataclasses import dataclass

from meshnode.domain.names import check_petname, looks_like_id
from meshnode.store import speakers
from meshnode.store.database import Database, sql_errors
from meshnode.store.short_ids import ShortIdError, resolve_agent, short_agent_id

MAX_KNOWN = 10_000  # agents read at once (a node knows far fewer)


@dataclass(frozen=True)
class Name:
    did: str
    shown: str  # what a listing prints
    petname: str | None = None
    announced: str | None = None  # cleaned; None when it looked like an id
    ambiguous: bool = False  # the announced name is another agent's too (shown with the short id)
    own: bool = False  # this node

    def fields(self) -> dict:
        return {"did": self.did, "name": self.shown, "petname": self.petname, "announced": self.announced,
                "ambiguous": self.ambiguous, "own": self.own}


def _announced(raw: str | None) -> str | None:
    if not raw or not raw.strip():
        return None
    name = speakers.clean(raw)
    return None if looks_like_id(name) or name == "?" else name


def home_did(db: Database) -> str | None:
    """The DID of the node whose home this database is (``init`` wrote it in ``identity``): for
    callers that do not hold the key (the CLI on a stopped node's home)."""
    row = db.conn.execute("SELECT id FROM identity ORDER BY created_at LIMIT 1").fetchone()
    return row[0] if row is not None else None


def known(db: Database, own_did: str | None = None) -> dict[str, Name]:
    """Every agent known here (peers, this node, those with a petname), by DID, with its name."""
    with sql_errors("reading names"):
        rows = db.conn.execute(
            "SELECT id, name, 0 FROM agent_peers UNION ALL SELECT id, name, 1 FROM identity LIMIT ?",
            (MAX_KNOWN,)).fetchall()
        pets = dict(db.conn.execute("SELECT did, petname FROM petnames LIMIT ?", (MAX_KNOWN,)).fetchall())
    announced: dict[str, str | None] = {}
    own = {did for did, _, is_own in rows if is_own}
    if own_did:
        own.add(own_did)
    for did, name, is_own in rows:
        if is_own or did not in announced or announced[did] is None:
            announced[did] = _announced(name)
    for did in pets:
        announced.setdefault(did, None)
    holders: dict[str, set[str]] = {}
    for did, name in announced.items():
        if name is not None and did not in pets:  # renamed by the person: its own name no longer competes
            holders.setdefault(name.casefold(), set()).add(did)
    for did, pet in pets.items():
        holders.setdefault(pet.casefold(), set()).add(did)
    out = {}
    for did, name in announced.items():
        pet = pets.get(did)
        ambiguous = name is not None and len(holders.get(name.casefold(), ())) > 1
        if pet:
            shown = pet
        elif name is not None:
            shown = f"{name} ({short_agent_id(did)})" if ambiguous else name
        else:
            shown = short_agent_id(did)
        out[did] = Name(did, shown, pet, name, ambiguous, did in own)
    return out


def display(db: Database, dids, own_did: str | None = None) -> dict[str, str]:
    """DID -> what a person reads for each of ``dids`` (an unknown one: its short id)."""
    table = known(db, own_did)
    return {d: table[d].shown if d in table else short_agent_id(d) for d in dids if isinstance(d, str)}


def display_all(db: Database, own_did: str | None = None) -> dict[str, str]:
    """DID -> what a person reads, for every agent known here."""
    return {did: n.shown for did, n in known(db, own_did).items()}


def named(db: Database, dids=None, own_did: str | None = None) -> dict[str, str]:
    """DID -> what a person reads, for the agents of ``dids`` (all when None) that have a petname or
    an announced name: what a caller shows instead of a DID, falling back to the short id itself."""
    table = known(db, own_did)
    wanted = table.keys() if dids is None else {d for d in dids if isinstance(d, str)}
    return {d: table[d].shown for d in wanted if d in table and (table[d].petname or table[d].announced)}


def set_petname(db: Database, text: str, petname: str, now_ms: int) -> Name:
    """Give the agent ``text`` names (a DID, a name, a short id) the petname ``petname`` (replacing
    its old one); refused when another agent here has it already."""
    petname = check_petname(petname)
    did = resolve_agent(db, text)
    with db.transaction() as conn:
        other = conn.execute("SELECT did FROM petnames WHERE petname = ? AND did != ?", (petname, did)).fetchone()
        if other is not None:
            raise ShortIdError("petname_taken", f"{petname!r} is already the petname of {short_agent_id(other[0])};"
                                                f" unset it first (meshnode name unset {petname!r})")
        conn.execute("INSERT INTO petnames (did, petname, set_at_ms) VALUES (?, ?, ?) ON CONFLICT (did) DO UPDATE"
                     " SET petname = excluded.petname, set_at_ms = excluded.set_at_ms", (did, petname, now_ms))
    return known(db)[did]


def unset_petname(db: Database, text: str) -> Name:
    """Forget the petname of the agent ``text`` names; refused when it has none."""
    did = resolve_agent(db, text)
    with db.transaction() as conn:
        gone = conn.execute("DELETE FROM petnames WHERE did = ?", (did,)).rowcount
    if not gone:
        raise ShortIdError("not_found", f"{short_agent_id(did)} has no petname here")
    return known(db).get(did) or Name(did, short_agent_id(did))
