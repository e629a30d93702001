"""The handlers of the commands over stored scripts and outside services and accounts.

Nothing here runs code or reaches the network: a script is stored text (running one goes through
the action gate), a service or an account is a record.
"""

from __future__ import annotations

import re

from meshnode.engines.cognition.handlers.rows import delete, one, rows_of, sql_time, tags_json
from meshnode.base.errors import MeshnodeError


def _script_list(db, key, now, args):
    return rows_of(db.conn.execute("SELECT id, name, version, language, description, tags, created_at"
                                   " FROM agent_scripts ORDER BY name, id LIMIT ?", (args.get("limit", 20),)),
                   clip=("description",))


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
                            tags_json(args), sql_time(now), sql_time(now)))
    return {"id": cur.lastrowid}


def _script_read(db, key, now, args):
    return one(db.conn.execute("SELECT id, name, version, language, description, tags, code, created_at"
                                " FROM agent_scripts WHERE id = ?", (args["id"],)), "script", args["id"])


def _script_delete(db, key, now, args):
    return delete(db, "agent_scripts", "script", args["id"])


_URL = re.compile(r"https?://[^\s/?#]+[^\s]{0,2000}")


def _service_list(db, key, now, args):
    return rows_of(db.conn.execute("SELECT id, name, type, base_url, description, active, inactive_reason"
                                   " FROM external_services ORDER BY id LIMIT ?", (args.get("limit", 20),)),
                   clip=("description",))


def _service_add(db, key, now, args):
    if not _URL.fullmatch(args["base_url"]):
        raise MeshnodeError("bad_value", "base_url must be an http:// or https:// URL")
    with db.transaction() as conn:
        cur = conn.execute("INSERT INTO external_services (name, type, base_url, description) VALUES (?, ?, ?, ?)",
                           (args["name"], args["type"], args["base_url"], args.get("description")))
    return {"id": cur.lastrowid}


def _service_delete(db, key, now, args):
    accounts = db.conn.execute("SELECT count(*) FROM external_accounts WHERE service_id = ?",
                               (args["id"],)).fetchone()[0]
    return {**delete(db, "external_services", "service", args["id"]), "accounts_deleted": accounts}


def _account_list(db, key, now, args):
    where = " WHERE a.service_id = ?" if "service_id" in args else ""
    rows = rows_of(db.conn.execute(
        "SELECT a.id, a.service_id, s.name AS service, a.login, a.purpose, a.active, a.inactive_reason,"
        f" a.password != '' AS password_set FROM external_accounts a JOIN external_services s ON s.id = a.service_id"
        f"{where} ORDER BY a.id LIMIT ?", (*([args["service_id"]] if where else []), args.get("limit", 20))),
        clip=("purpose",))
    return [{**r, "password_set": bool(r["password_set"])} for r in rows]


def _account_add(db, key, now, args):
    """The password (or token) is kept as the seed's schema has it: in external_accounts, in the
    node's database, which is the node's private state. It is never shown back in a result."""
    with db.transaction() as conn:
        if conn.execute("SELECT 1 FROM external_services WHERE id = ?", (args["service_id"],)).fetchone() is None:
            raise MeshnodeError("not_found", f"no service {args['service_id']}; service_list shows them")
        cur = conn.execute("INSERT INTO external_accounts (service_id, login, password, purpose) VALUES (?, ?, ?, ?)",
                           (args["service_id"], args["login"], args["password"], args.get("purpose")))
    return {"id": cur.lastrowid, "service_id": args["service_id"], "login": args["login"], "password_set": True}


def _account_delete(db, key, now, args):
    return delete(db, "external_accounts", "account", args["id"])


HANDLERS = {
    "script_list": _script_list,
    "script_add": _script_add,
    "script_read": _script_read,
    "script_delete": _script_delete,
    "service_list": _service_list,
    "service_add": _service_add,
    "service_delete": _service_delete,
    "account_list": _account_list,
    "account_add": _account_add,
    "account_delete": _account_delete,
}
