"""A new child's name is free: no active child of this parent, nor an open bundle invitation (a
child still to arrive), has it. Removed children's names may be used again (``family.child``
prefers the active child when a name is shared with removed ones); the default names never reuse
one (``model.default_name`` counts past every name ever given)."""

from __future__ import annotations

from meshnode.base.errors import SpawnError
from meshnode.store.database import Database, sql_errors
from meshnode.store.short_ids import short_agent_id


def live_names(db: Database, now_ms: int) -> dict[str, str]:
    """name -> what holds it, in words: an active child (its short id) or an open invitation."""
    with sql_errors("reading the children's names"):
        children = db.conn.execute("SELECT name, did FROM children WHERE state = 'active'").fetchall()
        invited = db.conn.execute("SELECT name, id FROM spawn_invitations WHERE used_by_did IS NULL"
                                  " AND expires_ms > ?", (now_ms,)).fetchall()
    out = {name: f"bundle invitation {str(inv)[:16]}" for name, inv in invited}
    out.update({name: f"child {short_agent_id(did)}" for name, did in children})
    return out


def check_free(name: str, live: dict[str, str]) -> None:
    """SpawnError ``name_taken`` when ``name`` is in ``live`` (``live_names``)."""
    if name in live:
        raise SpawnError("name_taken", f"{name!r} already names this node's {live[name]}; pick another --name"
                         " (`meshnode children list` shows the names)")
