"""The handlers of the commands over the agent's settings (config) and its identity: the agent
changes only what shapes its own thinking.
"""

from __future__ import annotations

import json
import re

from meshnode.engines.cognition.command_kind import named
from meshnode.engines.cognition.handlers.rows import CLIP, clip_text, json_of, rows_of, sql_time
from meshnode.base.container.schema import list_of
from meshnode.base.errors import MeshnodeError

HIDDEN_CONFIG = ("cycle.checkpoint",)  # the cycle's crash-resume state: internal, not a setting
_SECRET_KEY = re.compile(r"secret|password|passphrase|token|private", re.IGNORECASE)
_AGENT_KEY = re.compile(r"agent\.[a-z][a-z0-9_.]{0,62}")
MAX_AGENT_KEYS = 64
MAX_AGENT_VALUE = 4096
CHANGEABLE = ("cognition.emotions", "agent.<name>")
_REDIRECTS = {"cycle.": "cycle_settings, which checks each value", "cognition.pinned": "pin and unpin"}


def _config_value(key: str, value) -> str | None:
    """The stored JSON of an allowed change, or None to remove the key (value null)."""
    if value is None:
        return None
    if key == "cognition.emotions":
        err = list_of(named(32), max_items=32, non_empty=True)(value)
        if err:
            raise MeshnodeError("bad_value", f"cognition.emotions is a list of 1 to 32 emotion names: {err}")
    stored = json.dumps(value, ensure_ascii=False)
    if len(stored) > MAX_AGENT_VALUE:
        raise MeshnodeError("too_large", f"a config value is at most {MAX_AGENT_VALUE} characters of JSON")
    return stored


def _config_read(db, key, now, args):
    settings = {}
    for k, v in db.conn.execute("SELECT key, value FROM config ORDER BY key LIMIT 1000"):
        if k in HIDDEN_CONFIG:
            continue
        settings[k] = "(hidden)" if _SECRET_KEY.search(k) else json_of(v) if len(v or "") <= CLIP else clip_text(v)
    if "key" in args:
        if args["key"] not in settings:
            raise MeshnodeError("not_found", f"no config key {args['key']!r}")
        return {args["key"]: settings[args["key"]]}
    return {"config": settings, "changeable": list(CHANGEABLE)}


def _config_update(db, key, now, args):
    name = args["key"]
    if name != "cognition.emotions" and not _AGENT_KEY.fullmatch(name):
        via = next((how for prefix, how in _REDIRECTS.items() if name.startswith(prefix)), None)
        raise MeshnodeError("refused", f"config_update may change only {' and '.join(CHANGEABLE)}; {name[:128]!r}"
                                       f" {'changes through ' + via if via else 'belongs to the node'}")
    stored = _config_value(name, args["value"])
    with db.transaction() as conn:
        if stored is None:
            conn.execute("DELETE FROM config WHERE key = ?", (name,))
            return {"removed": name}
        others = conn.execute("SELECT count(*) FROM config WHERE key LIKE 'agent.%' AND key != ?", (name,))
        if name.startswith("agent.") and others.fetchone()[0] >= MAX_AGENT_KEYS:
            raise MeshnodeError("too_many", f"at most {MAX_AGENT_KEYS} agent.* settings; remove one first")
        conn.execute("INSERT INTO config (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET"
                     " value = excluded.value", (name, stored))
    return {"set": name}


def _identity(db, key, now, args):
    return {"did": key.did, "peer_id": key.peer_id}


def _identity_read(db, key, now, args):
    rows = rows_of(db.conn.execute("SELECT id, name, pubkey, metadata, created_at, updated_at FROM identity"
                                   " ORDER BY rowid LIMIT 20"), decode=("metadata",))
    return {"did": key.did, "peer_id": key.peer_id, "identity": rows}


def _identity_update(db, key, now, args):
    if not args:
        raise MeshnodeError("bad_args", "identity_update changes name, metadata or both")
    meta = json.dumps(args["metadata"], ensure_ascii=False) if "metadata" in args else None
    if meta is not None and len(meta) > 16 * 1024:
        raise MeshnodeError("too_large", "metadata is at most 16384 characters of JSON")
    with db.transaction() as conn:
        cur = conn.execute("UPDATE identity SET name = COALESCE(?, name), metadata = COALESCE(?, metadata),"
                           " updated_at = ? WHERE id = ?", (args.get("name"), meta, sql_time(now), key.did))
        if cur.rowcount == 0:  # a node made without `meshnode init`: its own row, from its own key
            conn.execute("INSERT INTO identity (id, name, pubkey, metadata, created_at, updated_at)"
                         " VALUES (?, ?, ?, ?, ?, ?)", (key.did, args.get("name"), key.public_key.hex(), meta,
                                                        sql_time(now), sql_time(now)))
    return {"did": key.did, "changed": sorted(args)}


HANDLERS = {
    "config_read": _config_read,
    "config_update": _config_update,
    "identity_show": _identity,
    "identity_read": _identity_read,
    "identity_update": _identity_update,
}
