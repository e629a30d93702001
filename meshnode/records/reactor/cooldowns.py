"""The reactor's cooldowns in force as rows (design 6.2): listed for a person and lifted by hand.

Only the limits a person may lift are cooldowns here: a wake of one signal kind for one agent
(``wake:<agent>:<kind>``; ``wake:<agent>`` a row of before, for every kind), a task's nudge
(``nudge:<lineage>:<agent>``) and a thread's message window (``msg:``). The ladder's rows
(``esc:``, ``int:``) and the scheduled self-checks (``check:``) are not. Run with ``store.read``
/ ``store.write``; a running node's core is told too (``ReactorService.lift_cooldowns``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from meshnode.base.config.reactor import RULE_NAMES
from meshnode.base.errors import MeshnodeError
from meshnode.records.reactor.statuses import COOLDOWN_PREFIXES
from meshnode.store.database import sql_errors

if TYPE_CHECKING:
    from meshnode.store.database import Database

MAX_KEYS = 1000
WAKE_KINDS = RULE_NAMES | {"other"}  # the signal kinds (rule names) a wake cooldown is kept per
_LIKE = " OR ".join("key LIKE ?" for _ in COOLDOWN_PREFIXES)


def parts(key: str) -> dict:
    """A cooldown row's key in words: {"limit": wake|nudge|message, "agent", "kind"} (kind: the
    signal kind of a wake row, "*" for a row of before; a nudge row's task lineage). ValueError
    for a row that is no cooldown (``esc:``, ``int:``, ``check:``)."""
    if key.startswith("wake:"):
        rest = key[5:]
        agent, sep, kind = rest.rpartition(":")
        if sep and kind in WAKE_KINDS:
            return {"limit": "wake", "agent": agent, "kind": kind}
        return {"limit": "wake", "agent": rest, "kind": "*"}
    if key.startswith("nudge:"):
        rest = key[6:]
        cut = rest.rfind(":did:")  # the agent: a DID, or a name without colons
        lineage, agent = (rest[:cut], rest[cut + 1:]) if cut >= 0 else rest.rpartition(":")[::2]
        return {"limit": "nudge", "agent": agent, "kind": lineage}
    if key.startswith("msg:"):
        return {"limit": "message", "agent": key[4:], "kind": "thread"}
    raise ValueError(f"{key[:200]!r} is not a cooldown (wake:, nudge: or msg: rows)")


def in_force(db: Database, now_ms: int) -> list[dict]:
    """The cooldown rows in force at ``now_ms``, the soonest to end first, each with its key in
    words (``parts``)."""
    with sql_errors("reading the reactor's cooldowns"):
        rows = db.conn.execute(f"SELECT key, until_ms, count FROM reactor_cooldowns WHERE until_ms > ? AND ({_LIKE})"
                               " ORDER BY until_ms, key LIMIT ?",
                               (now_ms, *(p + "%" for p in COOLDOWN_PREFIXES), MAX_KEYS)).fetchall()
    return [{"key": k, **parts(k), "until_ms": u, "count": c} for k, u, c in rows]


def check_keys(keys: list[str]) -> list[str]:
    """``keys`` when each names a cooldown (``bad_request`` otherwise: a person's typo or a ladder row)."""
    if not isinstance(keys, list) or not keys or len(keys) > MAX_KEYS:
        raise MeshnodeError("bad_request", f"name 1 to {MAX_KEYS} cooldown keys, or all of them")
    for key in keys:
        if not isinstance(key, str) or not 0 < len(key) <= 1000 or not key.startswith(COOLDOWN_PREFIXES):
            raise MeshnodeError("bad_request", f"{str(key)[:200]!r} is not a cooldown key (wake:<agent>:<kind>,"
                                " nudge:<lineage>:<agent> or msg:...; `reactor cooldowns` lists them)")
    return keys


def lift(db: Database, keys: list[str]) -> list[str]:
    """Delete the named cooldown rows; the keys that had a row."""
    check_keys(keys)
    with db.transaction() as conn:
        return [k for k in keys if conn.execute("DELETE FROM reactor_cooldowns WHERE key = ?", (k,)).rowcount]
