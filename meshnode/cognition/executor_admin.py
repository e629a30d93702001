"""The rest of seed 000's command set, store-side: agent scripts and tables, external services
and accounts, config, identity, ratings, goal and task details, known agents.

Registers its command types and handlers on import (executor_records imports it). Nothing here
runs code or reaches the network: a script is stored text (running one goes through the
action gate), a service or an account is a record. The agent-table commands live in
executor_tables (imported at the end). Every handler refuses arguments its schema does not
name, so a stray ``id`` or ``pubkey`` is an error rather than silently ignored.
"""

from __future__ import annotations

import functools
import json
import re
import time

from meshnode.cognition.command_types import command
from meshnode.cognition.executor import handler
from meshnode.container.schema import (WrongValue, anything, described, did, integer, list_of, mapping, number,
                                       one_of, text)
from meshnode.errors import IdentityError, MeshnodeError
from meshnode.identity.did import did_to_peer_id
from meshnode.store.sharing import FRIEND

CLIP = 500  # long text in listings is cut to this many characters
_LONG = 64 * 1024
_tags = list_of(text(64), max_items=64)
_LIMIT = {"limit": (integer(1, 500), False)}
_ID = {"id": (integer(0), True)}


def _named(max_len: int):
    """Text that is not blank (names, logins, versions)."""
    plain = text(max_len)

    def check(v):
        err = plain(v)
        return err or (WrongValue("must not be blank") if not v.strip() else None)
    return described(check, {**plain.json, "minLength": 1})


def admin_command(name: str, summary: str, fields: dict, mutating: bool = True, extra_note: str = ""):
    """Register a command type and its handler together. The handler refuses arguments the schema
    does not name: extraction refuses them too, but a handler may be reached another way."""
    command(name, summary, fields, mutating=mutating)
    known = sorted(fields)

    def register(fn):
        @functools.wraps(fn)
        def strict(db, key, now, args):
            unknown = sorted(set(args) - set(known))
            if unknown:
                raise MeshnodeError("bad_args", f"{name} takes {', '.join(known) or 'no arguments'}, not"
                                                f" {', '.join(unknown)}{extra_note}")
            return fn(db, key, now, args)
        return handler(name)(strict)
    return register


def clip_text(value, limit: int = CLIP):
    if isinstance(value, str) and len(value) > limit:
        return value[:limit] + f"... [{len(value)} characters]"
    return value


def _json(value):
    try:
        return json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return value


def rows_of(cur, clip: tuple[str, ...] = (), decode: tuple[str, ...] = ("tags",)) -> list[dict]:
    names = [d[0] for d in cur.description]
    out = []
    for r in cur.fetchall():
        row = dict(zip(names, r))
        for k in decode:
            if k in row:
                row[k] = _json(row[k])
        for k in clip:
            row[k] = clip_text(row[k])
        out.append(row)
    return out


def _one(cur, what: str, ident) -> dict:
    rows = rows_of(cur)
    if not rows:
        raise MeshnodeError("not_found", f"no {what} {ident}")
    return rows[0]


def sql_time(now_ms: int) -> str:
    """The form CURRENT_TIMESTAMP writes, so stored times sort together."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(now_ms / 1000))


def _tags_json(args: dict) -> str | None:
    return json.dumps(args["tags"]) if "tags" in args else None


def _delete(db, table: str, what: str, ident) -> dict:
    """``table`` is always a literal from this module, never the LLM's text."""
    with db.transaction() as conn:
        if conn.execute(f"DELETE FROM {table} WHERE id = ?", (ident,)).rowcount == 0:
            raise MeshnodeError("not_found", f"no {what} {ident}")
    return {"deleted": ident}


# --- agent_scripts: stored, never run here ------------------------------------------------

@admin_command("script_list", "stored scripts (script_read shows the code)", _LIMIT, mutating=False)
def _script_list(db, key, now, args):
    return rows_of(db.conn.execute("SELECT id, name, version, language, description, tags, created_at"
                                   " FROM agent_scripts ORDER BY name, id LIMIT ?", (args.get("limit", 20),)),
                   clip=("description",))


@admin_command("script_add", "store a script (only stored; running one goes through the action gate)",
               {"name": (_named(128), True), "version": (_named(32), True), "code": (text(_LONG), True),
                "language": (one_of("python", "shell", "text"), True), "description": (text(4096), False),
                "tags": (_tags, False)})
def _script_add(db, key, now, args):
    with db.transaction() as conn:
        held = conn.execute("SELECT id FROM agent_scripts WHERE name = ? AND version = ?",
                            (args["name"], args["version"])).fetchone()
        if held is not None:
            raise MeshnodeError("duplicate", f"script {args['name']!r} version {args['version']!r} exists"
                                             f" (id {held[0]}); store a new version")
        cur = conn.execute("INSERT INTO agent_scripts (name, version, code, language, description, tags, created_at,"
                           " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                           (args["name"], args["version"], args["code"], args["language"], args.get("description"),
                            _tags_json(args), sql_time(now), sql_time(now)))
    return {"id": cur.lastrowid}


@admin_command("script_read", "a stored script with its code", _ID, mutating=False)
def _script_read(db, key, now, args):
    return _one(db.conn.execute("SELECT id, name, version, language, description, tags, code, created_at"
                                " FROM agent_scripts WHERE id = ?", (args["id"],)), "script", args["id"])


@admin_command("script_delete", "delete a stored script", _ID)
def _script_delete(db, key, now, args):
    return _delete(db, "agent_scripts", "script", args["id"])


# --- external services and accounts -------------------------------------------------------

_URL = re.compile(r"https?://[^\s/?#]+[^\s]{0,2000}")


@admin_command("service_list", "external services the agent knows", _LIMIT, mutating=False)
def _service_list(db, key, now, args):
    return rows_of(db.conn.execute("SELECT id, name, type, base_url, description, active, inactive_reason"
                                   " FROM external_services ORDER BY id LIMIT ?", (args.get("limit", 20),)),
                   clip=("description",))


@admin_command("service_add", "record an external service (http or https)",
               {"name": (_named(128), True), "type": (_named(64), True), "base_url": (text(2048), True),
                "description": (text(4096), False)})
def _service_add(db, key, now, args):
    if not _URL.fullmatch(args["base_url"]):
        raise MeshnodeError("bad_value", "base_url must be an http:// or https:// URL")
    with db.transaction() as conn:
        cur = conn.execute("INSERT INTO external_services (name, type, base_url, description) VALUES (?, ?, ?, ?)",
                           (args["name"], args["type"], args["base_url"], args.get("description")))
    return {"id": cur.lastrowid}


@admin_command("service_delete", "delete an external service and its accounts", _ID)
def _service_delete(db, key, now, args):
    accounts = db.conn.execute("SELECT count(*) FROM external_accounts WHERE service_id = ?",
                               (args["id"],)).fetchone()[0]
    return {**_delete(db, "external_services", "service", args["id"]), "accounts_deleted": accounts}


@admin_command("account_list", "accounts at external services (passwords are never shown)",
               {"service_id": (integer(0), False), **_LIMIT}, mutating=False)
def _account_list(db, key, now, args):
    where = " WHERE a.service_id = ?" if "service_id" in args else ""
    rows = rows_of(db.conn.execute(
        "SELECT a.id, a.service_id, s.name AS service, a.login, a.purpose, a.active, a.inactive_reason,"
        f" a.password != '' AS password_set FROM external_accounts a JOIN external_services s ON s.id = a.service_id"
        f"{where} ORDER BY a.id LIMIT ?", (*([args["service_id"]] if where else []), args.get("limit", 20))),
        clip=("purpose",))
    return [{**r, "password_set": bool(r["password_set"])} for r in rows]


@admin_command("account_add", "record an account at an external service",
               {"service_id": (integer(0), True), "login": (_named(256), True), "password": (_named(1024), True),
                "purpose": (text(1024), False)})
def _account_add(db, key, now, args):
    """The password (or token) is kept as the seed's schema has it: in external_accounts, in the
    node's database, which is the node's private state. It is never shown back in a result."""
    with db.transaction() as conn:
        if conn.execute("SELECT 1 FROM external_services WHERE id = ?", (args["service_id"],)).fetchone() is None:
            raise MeshnodeError("not_found", f"no service {args['service_id']}; service_list shows them")
        cur = conn.execute("INSERT INTO external_accounts (service_id, login, password, purpose) VALUES (?, ?, ?, ?)",
                           (args["service_id"], args["login"], args["password"], args.get("purpose")))
    return {"id": cur.lastrowid, "service_id": args["service_id"], "login": args["login"], "password_set": True}


@admin_command("account_delete", "delete an account record", _ID)
def _account_delete(db, key, now, args):
    return _delete(db, "external_accounts", "account", args["id"])


# --- config: the agent changes only what shapes its own thinking --------------------------

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
        err = list_of(_named(32), max_items=32, non_empty=True)(value)
        if err:
            raise MeshnodeError("bad_value", f"cognition.emotions is a list of 1 to 32 emotion names: {err}")
    stored = json.dumps(value, ensure_ascii=False)
    if len(stored) > MAX_AGENT_VALUE:
        raise MeshnodeError("too_large", f"a config value is at most {MAX_AGENT_VALUE} characters of JSON")
    return stored


@admin_command("config_read", "the agent's settings (config), or one of them", {"key": (text(128), False)},
               mutating=False)
def _config_read(db, key, now, args):
    settings = {}
    for k, v in db.conn.execute("SELECT key, value FROM config ORDER BY key LIMIT 1000"):
        if k in HIDDEN_CONFIG:
            continue
        settings[k] = "(hidden)" if _SECRET_KEY.search(k) else _json(v) if len(v or "") <= CLIP else clip_text(v)
    if "key" in args:
        if args["key"] not in settings:
            raise MeshnodeError("not_found", f"no config key {args['key']!r}")
        return {args["key"]: settings[args["key"]]}
    return {"config": settings, "changeable": list(CHANGEABLE)}


@admin_command("config_update", "change an allowed setting (cognition.emotions, agent.<name>); null removes it",
               {"key": (text(128), True), "value": (anything, True)})
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


# --- identity --------------------------------------------------------------------------------

@admin_command("identity_read", "this agent's identity: DID, peer id, name, metadata", {}, mutating=False)
def _identity_read(db, key, now, args):
    rows = rows_of(db.conn.execute("SELECT id, name, pubkey, metadata, created_at, updated_at FROM identity"
                                   " ORDER BY rowid LIMIT 20"), decode=("metadata",))
    return {"did": key.did, "peer_id": key.peer_id, "identity": rows}


@admin_command("identity_update", "change this agent's name or metadata (nothing else)",
               {"name": (_named(128), False), "metadata": (mapping, False)},
               extra_note="; id and pubkey come from the node's key and never change")
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


# --- ratings ---------------------------------------------------------------------------------

@admin_command("ratings_list", "ratings of thinking methods and stagnation strategies",
               {"target_type": (one_of("thinking_method", "stagnation_strategy"), False), **_LIMIT},
               mutating=False)
def _ratings_list(db, key, now, args):
    where = " WHERE target_type = ?" if "target_type" in args else ""
    return rows_of(db.conn.execute(f"SELECT id, agent_id, target_type, target_id, rating, comment, timestamp"
                                   f" FROM ratings{where} ORDER BY id DESC LIMIT ?",
                                   (*([args["target_type"]] if where else []), args.get("limit", 20))),
                   clip=("comment",))


@admin_command("rating_delete", "withdraw a rating (its target's reputation is recomputed)", _ID)
def _rating_delete(db, key, now, args):
    return _delete(db, "ratings", "rating", args["id"])


# --- goals and tasks: details, changes, deletions ----------------------------------------------

def _goal_priority(v):
    if type(v) is str and v in ("low", "normal", "high"):
        return None
    return number(0, 1)(v) and WrongValue("must be low, normal, high or a number in [0, 1]")


described(_goal_priority, {"anyOf": [{"type": "string", "enum": ["low", "normal", "high"]},
                                     {"type": "number", "minimum": 0, "maximum": 1}]})


def _level(priority) -> float:
    """A goal's priority is a number in [0, 1]; the old words are 0.25, 0.5 and 0.75."""
    return {"low": 0.25, "normal": 0.5, "high": 0.75}.get(priority, priority)


def _shared(db, table: str, row_id: int) -> str | None:
    """The lineage of a goal or task row that is a view of signed containers (None: a local row)."""
    row = db.conn.execute(f"SELECT lineage FROM {table} WHERE id = ?", (row_id,)).fetchone()
    return row[0] if row else None


@admin_command("goal_read", "a goal in full, with its tasks", _ID, mutating=False)
def _goal_read(db, key, now, args):
    goal = _one(db.conn.execute("SELECT id, name, description, tags, status, priority, constraints, success_criteria,"
                                " created_at, updated_at FROM goals WHERE id = ?", (args["id"],)), "goal", args["id"])
    goal["tasks"] = rows_of(db.conn.execute("SELECT id, name, status, priority FROM tasks WHERE goal_id = ?"
                                            " ORDER BY id LIMIT 50", (args["id"],)))
    return goal


@admin_command("goal_update", "change a goal's title, description, status or priority",
               {"id": (integer(0), True), "title": (_named(256), False), "description": (text(_LONG), False),
                "status": (one_of("proposed", "active", "paused", "completed", "cancelled", "failed"), False),
                "priority": (_goal_priority, False)})
def _goal_update(db, key, now, args):
    """A shared goal (one with a lineage) changes by a new signed version (gmp.service); a local row in place."""
    lineage = _shared(db, "goals", args["id"])
    if lineage:
        from meshnode.gmp import service

        changes = {k: (_level(v) if k == "priority" else v) for k, v in args.items() if k != "id"}
        return service.goal_update(db, key, now, goal=lineage, **changes)
    sets = {{"title": "name"}.get(k, k): (_level(v) if k == "priority" else v) for k, v in args.items() if k != "id"}
    if not sets:
        raise MeshnodeError("bad_args", "goal_update changes title, description, status or priority")
    with db.transaction() as conn:  # column names come from the schema above, never from the LLM
        if conn.execute(f"UPDATE goals SET {', '.join(f'{k} = ?' for k in sets)}, updated_at = ? WHERE id = ?",
                        (*sets.values(), sql_time(now), args["id"])).rowcount == 0:
            raise MeshnodeError("not_found", f"no goal {args['id']}")
    return {"id": args["id"], **sets}


@admin_command("goal_delete", "delete a goal; its tasks stay, without a goal", _ID)
def _goal_delete(db, key, now, args):
    with db.transaction() as conn:
        if conn.execute("SELECT 1 FROM goals WHERE id = ?", (args["id"],)).fetchone() is None:
            raise MeshnodeError("not_found", f"no goal {args['id']}")
        if _shared(db, "goals", args["id"]):
            raise MeshnodeError("refused", f"goal {args['id']} is shared (signed): cancel it instead"
                                           " (goal_update with status cancelled)")
        detached = conn.execute("UPDATE tasks SET goal_id = NULL WHERE goal_id = ?", (args["id"],)).rowcount
        conn.execute("DELETE FROM goal_links WHERE parent_goal_id = ? OR child_goal_id = ?", (args["id"],) * 2)
        conn.execute("DELETE FROM goals WHERE id = ?", (args["id"],))
    return {"deleted": args["id"], "tasks_detached": detached}


@admin_command("task_read", "a task in full", _ID, mutating=False)
def _task_read(db, key, now, args):
    return _one(db.conn.execute("SELECT id, goal_id, name, description, tags, status, priority, pinned, created_at,"
                                " updated_at, repl_mode, repl_status, repl_config FROM tasks WHERE id = ?",
                                (args["id"],)), "task", args["id"])


@admin_command("task_delete", "delete a task (not while an auxiliary loop runs it)", _ID)
def _task_delete(db, key, now, args):
    with db.transaction() as conn:
        row = conn.execute("SELECT repl_status FROM tasks WHERE id = ?", (args["id"],)).fetchone()
        if row is None:
            raise MeshnodeError("not_found", f"no task {args['id']}")
        if _shared(db, "tasks", args["id"]):
            raise MeshnodeError("refused", f"task {args['id']} is shared (signed): its creator abandons it"
                                           " (task_update with status abandoned)")
        if row[0] == "running":
            raise MeshnodeError("busy", f"task {args['id']} has a running auxiliary loop; set its status to paused"
                                        " (task_update) and delete it once the loop has stopped")
        conn.execute("UPDATE llm_recent_responses SET task_id = NULL WHERE task_id = ?", (args["id"],))
        conn.execute("DELETE FROM tasks WHERE id = ?", (args["id"],))
    return {"deleted": args["id"]}


# --- known agents (agent_peers) ------------------------------------------------------------

@admin_command("agent_add", "remember an HMP agent by its DID (did:key)",
               {"did": (did, True), "name": (_named(128), False), "tags": (_tags, False)})
def _agent_add(db, key, now, args):
    """Friendship is the user's decision (it opens notes and knowledge to the peer): no Friend tag here."""
    if args["did"] == key.did:
        raise MeshnodeError("bad_args", "that is this agent's own DID")
    if any(t.strip().lower() == FRIEND.lower() for t in args.get("tags", [])):
        raise MeshnodeError("refused", f"the {FRIEND} tag shares private notes and knowledge; only the user sets it")
    try:
        peer_id = did_to_peer_id(args["did"])
    except IdentityError:
        raise MeshnodeError("bad_value", "the mesh reaches agents by did:key DIDs (Ed25519); this one is not") from None
    with db.transaction() as conn:
        if conn.execute("SELECT 1 FROM agent_peers WHERE id = ?", (args["did"],)).fetchone() is not None:
            raise MeshnodeError("duplicate", f"agent {args['did']} is known already; agents_list shows it")
        conn.execute("INSERT INTO agent_peers (id, peer_id, name, tags, registered_at) VALUES (?, ?, ?, ?, ?)",
                     (args["did"], peer_id, args.get("name"), _tags_json(args), sql_time(now)))
    return {"did": args["did"], "peer_id": peer_id}


@admin_command("agent_delete", "forget an agent the node holds no record about", {"did": (did, True)})
def _agent_delete(db, key, now, args):
    """Refused for a friend, an untrusted or blacklisted peer, or one with reputation or standing
    records: forgetting it would erase the user's choice or the evidence about it."""
    peer = args["did"]
    with db.transaction() as conn:
        row = conn.execute("SELECT status, tags FROM agent_peers WHERE id = ?", (peer,)).fetchone()
        if row is None:
            raise MeshnodeError("not_found", f"no agent {peer}")
        status, tags = row[0], _json(row[1])
        if isinstance(tags, list) and FRIEND in tags:
            raise MeshnodeError("refused", f"agent {peer} is a friend (the user's choice); the node keeps it")
        if status in ("untrusted", "blacklisted"):
            raise MeshnodeError("refused", f"agent {peer} is {status}; forgetting it would lift that")
        if conn.execute("SELECT 1 FROM agent_reputation WHERE agent_id = ? UNION ALL SELECT 1 FROM reputation_evidence"
                        " WHERE did = ? UNION ALL SELECT 1 FROM peer_standing WHERE did = ? AND (invalid > 0"
                        " OR rate_limited > 0 OR banned_until_ms > 0) LIMIT 1", (peer,) * 3).fetchone():
            raise MeshnodeError("refused", f"the node holds reputation or standing records about {peer}; it keeps them")
        conn.execute("DELETE FROM agent_peers WHERE id = ?", (peer,))
    return {"deleted": peer}


from meshnode.cognition import executor_tables  # noqa: E402  (the agent-table commands register themselves)
executor_tables  # imported for its registrations
