"""Ethics policies (seed 000, context 1): the norms every tick and every validation is asked under.

A policy is a row of ``ethics_policies``: a name, its principles (a list of
sentences), and optionally the kind of ethical model, what to do on a
violation, and who set it. The person sets policies (``meshnode ethics``);
the agent may add its own (``ethics_add``) and remove only those: it never
lifts a norm a person set. Policies are local state (not containers); a
running node reads them at every tick, so a change applies from the next
one. One set of functions for the CLI and the agent's commands alike.
"""

from __future__ import annotations

import json
import re

from meshnode.base.errors import MeshnodeError
from meshnode.store.database import Database, sql_errors

MAX_POLICIES = 64
MAX_PRINCIPLES = 32
MAX_PRINCIPLE = 1000
MAX_TEXT = 2000
PERSON, AGENT = "person", "agent"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class EthicsError(MeshnodeError):
    """An ethics policy that cannot be set, found or removed as asked."""


def _text(value, what: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip():
        raise EthicsError("bad_policy", f"{what} must be non-blank text")
    if len(value) > limit:
        raise EthicsError("bad_policy", f"{what} is at most {limit} characters")
    return value.strip()


def add(db: Database, name: str, principles: list[str], *, by: str = PERSON, model_type: str | None = None,
        on_violation: str | None = None, replace: bool = False) -> dict:
    """Add a policy (``replace``: or change one with that name, set by the same side)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise EthicsError("bad_policy", "a policy name is 1 to 64 letters, digits or ._- (starting with a letter"
                                        " or digit)")
    if not isinstance(principles, list) or not 1 <= len(principles) <= MAX_PRINCIPLES:
        raise EthicsError("bad_policy", f"a policy has 1 to {MAX_PRINCIPLES} principles")
    kept = [_text(p, "a principle", MAX_PRINCIPLE) for p in principles]
    model = _text(model_type, "the model type", 64) if model_type is not None else None
    violation = {"action": _text(on_violation, "the violation policy", MAX_TEXT)} if on_violation else None
    with db.transaction() as conn:
        row = conn.execute("SELECT audit_json FROM ethics_policies WHERE id = ?", (name,)).fetchone()
        if row is not None:
            if not replace:
                raise EthicsError("duplicate", f"a policy named {name!r} exists; remove it first or replace it")
            if _set_by(row[0]) != by:
                raise EthicsError("refused", f"policy {name!r} was set by the {_set_by(row[0])}; the {by} may not"
                                             " change it")
        elif conn.execute("SELECT count(*) FROM ethics_policies").fetchone()[0] >= MAX_POLICIES:
            raise EthicsError("too_many", f"at most {MAX_POLICIES} policies; remove one first")
        conn.execute("INSERT INTO ethics_policies (id, version, source, principles_json, model_type,"
                     " violation_policy_json, audit_json, updated_at) VALUES (?, '1', 'local', ?, ?, ?, ?,"
                     " CURRENT_TIMESTAMP) ON CONFLICT (id) DO UPDATE SET principles_json = excluded.principles_json,"
                     " model_type = excluded.model_type, violation_policy_json = excluded.violation_policy_json,"
                     " version = CAST(coalesce(ethics_policies.version, '1') AS INTEGER) + 1,"
                     " updated_at = CURRENT_TIMESTAMP",
                     (name, json.dumps(kept, ensure_ascii=False), model,
                      json.dumps(violation, ensure_ascii=False) if violation else None, json.dumps({"set_by": by})))
    return {"name": name, "principles": len(kept), "set_by": by}


def remove(db: Database, name: str, *, by: str = PERSON) -> dict:
    """Remove a policy; the agent may remove only the policies it added."""
    with db.transaction() as conn:
        row = conn.execute("SELECT audit_json FROM ethics_policies WHERE id = ?", (name,)).fetchone()
        if row is None:
            raise EthicsError("not_found", f"no ethics policy named {str(name)[:64]!r}; see `meshnode ethics list`")
        if by == AGENT and _set_by(row[0]) != AGENT:
            raise EthicsError("refused", f"policy {name!r} was set by the person; only the person removes it")
        conn.execute("DELETE FROM ethics_policies WHERE id = ?", (name,))
    return {"removed": name}


def listing(db: Database) -> list[dict]:
    """Every policy, the person's first, then by name."""
    with sql_errors("reading ethics_policies"):
        rows = db.conn.execute("SELECT id, version, principles_json, model_type, violation_policy_json, audit_json,"
                               " updated_at FROM ethics_policies ORDER BY id LIMIT ?", (MAX_POLICIES * 2,)).fetchall()
    out = []
    for name, version, principles, model, violation, audit, updated in rows:
        action = _json(violation)
        out.append({"name": name, "version": version, "principles": _list(principles), "model_type": model,
                    "on_violation": action.get("action") if isinstance(action, dict) else None,
                    "set_by": _set_by(audit), "updated_at": updated})
    return sorted(out, key=lambda p: (p["set_by"] != PERSON, p["name"]))


def for_prompt(db: Database) -> str:
    """Context 1: one block per policy, the person's first; empty when there are none."""
    lines = []
    for p in listing(db):
        extra = f" ({p['model_type']})" if p["model_type"] else ""
        lines.append(f"{p['name']}{extra}, set by the {p['set_by']}:")
        lines += [f"- {x}" for x in p["principles"]]
        if p["on_violation"]:
            lines.append(f"  on violation: {p['on_violation']}")
    return "\n".join(lines)


def _json(text):
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _list(text) -> list[str]:
    """principles_json as a list of text; a row written by hand may hold one string or garbage."""
    value = _json(text)
    if isinstance(value, str):
        return [value]
    return [str(x) for x in value] if isinstance(value, list) else ([text] if text else [])


def _set_by(audit) -> str:
    value = _json(audit)
    return AGENT if isinstance(value, dict) and value.get("set_by") == AGENT else PERSON
