"""Whom a new child counts as its friends: its parent, and only whom ``--friends`` names.

A friend gets a node's friends notes and knowledge, and its containers are never a stranger's
(store.sharing, store.known). The parent's friends agreed to be the parent's, not its children's:
a trained or clone child gets the parent's known agents (their ``agent_peers`` rows) without the
Friend tag, unless the person asks for more:

    --friends inherit              the parent's friends become the child's too
    --friends DID[,DID...]         these DIDs become the child's friends
    --friends inherit,DID          both

The parent itself is always the child's friend (the family tie, ``family.tie_parent``).
"""

from __future__ import annotations

from dataclasses import dataclass

from meshnode.base.errors import MeshnodeError, SpawnError
from meshnode.base.identity.did import did_to_peer_id
from meshnode.store.database import Database
from meshnode.store.peers import upsert_peer_row
from meshnode.store.sharing import FRIEND, set_friend_tag

INHERIT = "inherit"
MAX_ITEMS = 32
MAX_TEXT = 4096


@dataclass(frozen=True)
class Choice:
    inherit: bool = False        # the parent's friends too
    dids: tuple[str, ...] = ()   # and these


def parse(text: str | None, kind: str) -> Choice:
    """``--friends`` as given (None: the parent only); SpawnError ``bad_friends`` for anything else
    than ``inherit`` and Ed25519 ``did:key`` DIDs, comma separated, at most ``MAX_ITEMS``."""
    if text is None:
        return Choice()
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise SpawnError("bad_friends", f"--friends is one text of at most {MAX_TEXT} characters")
    items = [i.strip() for i in text.split(",") if i.strip()]
    if not items or len(items) > MAX_ITEMS:
        raise SpawnError("bad_friends", f"--friends names 1 to {MAX_ITEMS} items: '{INHERIT}' and DIDs, comma"
                         " separated")
    dids = []
    for item in items:
        if item == INHERIT:
            continue
        try:
            did_to_peer_id(item)
        except (MeshnodeError, ValueError):
            raise SpawnError("bad_friends", f"--friends takes '{INHERIT}' and DIDs (did:key:z6Mk...), comma"
                             f" separated; {item[:60]!r} is neither") from None
        dids.append(item)
    inherit = INHERIT in items
    if inherit and kind == "newborn":
        raise SpawnError("bad_friends", f"a newborn gets none of its parent's known agents: --friends {INHERIT}"
                         " goes with --kind trained or clone (name DIDs instead)")
    return Choice(inherit, tuple(dict.fromkeys(dids)))


def keep(db: Database, choice: Choice, *, now_ms: int) -> list[str]:
    """On the child's freshly seeded store: the Friend tag off every agent the parent's rows brought,
    unless ``choice.inherit``; then on each DID ``choice`` names (a row made for one the parent did
    not know). The child's friends now, sorted (the parent is added by the tie)."""
    with db.transaction() as conn:
        tagged = [r[0] for r in conn.execute(
            "SELECT p.id FROM agent_peers p, json_each(p.tags) t WHERE json_valid(p.tags) AND t.value = ?", (FRIEND,))]
        if not choice.inherit:
            for did in tagged:
                set_friend_tag(conn, did, False)
            tagged = []
        for did in choice.dids:
            if conn.execute("SELECT 1 FROM agent_peers WHERE id = ?", (did,)).fetchone() is None:
                upsert_peer_row(conn, did, peer_id=did_to_peer_id(did), now_ms=now_ms, source="exchange")
            set_friend_tag(conn, did, True)
    return sorted({*tagged, *choice.dids})
