"""``llm_registry``: the LLMs this node may think with, by priority and role (main, validator).

Each row's ``config_json`` holds the endpoint (base URL, model, priority, the
name of the environment variable with its API key, timeout). The main LLM is
the one with the highest priority that is not a validator; when it cannot be
reached the core falls back to the next (core-outage mode when none answers).
"""

from __future__ import annotations

import json
import re

from dataclasses import dataclass

from meshnode.base.errors import MeshnodeError
from meshnode.store.database import Database, sql_errors

_ID = re.compile(r"[A-Za-z0-9._-]{1,64}")


@dataclass(frozen=True)
class Endpoint:
    """One LLM this node may ask (cognition.llm.chat speaks to it)."""

    id: str
    base_url: str  # e.g. http://127.0.0.1:11434/v1
    model: str
    priority: int = 0
    validator: bool = False
    api_key_env: str | None = None  # the key is read from this variable, never stored
    timeout_s: float = 120.0


class RegistryError(MeshnodeError):
    """An LLM entry that cannot be added, found or used."""


def add(db: Database, e: Endpoint) -> None:
    if not _ID.fullmatch(e.id):
        raise RegistryError("bad_llm", "an LLM name is 1 to 64 letters, digits or ._-")
    if not re.fullmatch(r"https?://[^\s]{1,2000}", e.base_url):
        raise RegistryError("bad_llm", "the URL must start with http:// or https://")
    config = {"base_url": e.base_url, "model": e.model, "priority": e.priority, "api_key_env": e.api_key_env,
              "timeout_s": e.timeout_s}
    with db.transaction() as conn:
        conn.execute("INSERT INTO llm_registry (id, name, config_json, is_validator) VALUES (?, ?, ?, ?)"
                     " ON CONFLICT (id) DO UPDATE SET config_json = excluded.config_json,"
                     " is_validator = excluded.is_validator", (e.id, e.model, json.dumps(config), int(e.validator)))


_UNCHANGED = object()


def update(db: Database, llm_id: str, *, url: str | None = None, model: str | None = None,
           priority: int | None = None, validator: bool | None = None, api_key_env=_UNCHANGED,
           timeout_s: float | None = None) -> Endpoint:
    """Change the given settings of a registered LLM, keep the rest; the LLM must exist
    (``add`` makes one). ``api_key_env`` None forgets the variable's name."""
    current = next((e for e in endpoints(db) if e.id == llm_id), None)
    if current is None:
        raise RegistryError("no_llm", f"no LLM named {llm_id!r}; see `meshnode llm list`")
    if model is not None and not model.strip():
        raise RegistryError("bad_llm", "the model name must not be blank")
    if timeout_s is not None and not 0 < timeout_s <= 3600:
        raise RegistryError("bad_llm", "the timeout is more than 0 and at most 3600 seconds")
    if priority is not None and not -1_000_000 <= priority <= 1_000_000:
        raise RegistryError("bad_llm", "the priority is between -1000000 and 1000000")
    if api_key_env not in (_UNCHANGED, None) and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", api_key_env):
        raise RegistryError("bad_llm", "the API key variable is a name of letters, digits and _")
    changed = Endpoint(llm_id, url if url is not None else current.base_url,
                       model if model is not None else current.model,
                       priority if priority is not None else current.priority,
                       validator if validator is not None else current.validator,
                       current.api_key_env if api_key_env is _UNCHANGED else api_key_env,
                       timeout_s if timeout_s is not None else current.timeout_s)
    add(db, changed)
    return changed


AGENT_SETTINGS = ("priority", "timeout_s", "model")  # what the agent may change of an LLM it thinks with


def agent_update(db: Database, llm_id: str, changes: dict) -> Endpoint:
    """The agent's change to an LLM: what shapes its thinking (``AGENT_SETTINGS``), never the URL,
    the API key variable or the validator role (pointing an LLM elsewhere could send the key and
    the contexts to a stranger; choosing its own validators would let it pass its own answers)."""
    if not changes or set(changes) - set(AGENT_SETTINGS):
        raise RegistryError("bad_args", "llm_update changes priority, timeout_s or model")
    if any(e.id == llm_id and e.validator for e in endpoints(db)):
        raise RegistryError("refused", f"{llm_id} is a validator: its settings are the person's to change")
    return update(db, llm_id, **changes)


def remove(db: Database, llm_id: str) -> None:
    with db.transaction() as conn:
        if conn.execute("DELETE FROM llm_registry WHERE id = ?", (llm_id,)).rowcount == 0:
            raise RegistryError("no_llm", f"no LLM named {llm_id!r}; see `meshnode llm list`")


def endpoints(db: Database) -> list[Endpoint]:
    """Every registered LLM, highest priority first."""
    with sql_errors("reading llm_registry"):
        rows = db.conn.execute("SELECT id, config_json, is_validator FROM llm_registry ORDER BY id").fetchall()
    out = []
    for llm_id, config_json, validator in rows:
        try:
            c = json.loads(config_json or "{}")
            out.append(Endpoint(llm_id, c["base_url"], c["model"], int(c.get("priority", 0)), bool(validator),
                                c.get("api_key_env"), float(c.get("timeout_s", 120.0))))
        except (ValueError, KeyError, TypeError):
            continue  # a row written by hand that is not an endpoint: not ours to use
    return sorted(out, key=lambda e: (-e.priority, e.id))


def select(db: Database, llm_id: str) -> None:
    """Make ``llm_id`` the main LLM: its priority becomes the highest."""
    current = endpoints(db)
    chosen = next((e for e in current if e.id == llm_id), None)
    if chosen is None:
        raise RegistryError("no_llm", f"no LLM named {llm_id!r}; see `meshnode llm list`")
    top = max((e.priority for e in current), default=0)
    add(db, Endpoint(chosen.id, chosen.base_url, chosen.model, top + 1, chosen.validator, chosen.api_key_env,
                     chosen.timeout_s))


def mains(db: Database) -> list[Endpoint]:
    return [e for e in endpoints(db) if not e.validator]


def validators_with_trust(db: Database) -> list[tuple[Endpoint, float]]:
    """Validator LLMs with their vote weight (``llm_registry.trust_score``, 1.0 by default)."""
    with sql_errors("reading llm_registry"):
        trust = dict(db.conn.execute("SELECT id, trust_score FROM llm_registry WHERE is_validator = 1"))
    return [(e, float(trust.get(e.id) if trust.get(e.id) is not None else 1.0))
            for e in endpoints(db) if e.validator]
