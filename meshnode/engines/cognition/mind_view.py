"""What `meshnode mind` shows, read from the store: validation metrics, each validator's weight
and why, held commands, decisions taken alone. The same view with the node running (over the
control socket, plus the cycle's live state) or stopped (the CLI reads the database)."""

from __future__ import annotations

import json

from meshnode.records.mind import held, registry
from meshnode.engines.cognition import isolation
from meshnode.engines.cognition.validation import ADAPT_WINDOW, adapted_trust, metrics
from meshnode.store.database import Database, sql_errors

HISTORY = 1000  # stored answers the metrics look at (the table keeps about 200)


def view(db: Database) -> dict:
    with sql_errors("reading llm_recent_responses"):
        rows = db.conn.execute("SELECT auto_pass, validators, rating FROM llm_recent_responses WHERE role ="
                               " 'assistant' ORDER BY id DESC LIMIT ?", (HISTORY,)).fetchall()[::-1]
    return {"validation": metrics(rows), "validators": weights(db, rows), "held": held.summary(db),
            "emergency_to_revisit": isolation.to_revisit(db)}


def weights(db: Database, rows: list[tuple]) -> list[dict]:
    """Each validator LLM, and each peer that validated lately: its base trust, the factor its
    record earns it (``adapted_trust``), the weight its next vote carries, and why."""
    adapt = adapted_trust(rows[-2 * ADAPT_WINDOW:])
    out = []
    for endpoint, trust in registry.validators_with_trust(db):
        out.append(_weight(endpoint.id, "llm", trust, adapt.pop(endpoint.id, None)))
    for name, a in sorted(adapt.items()):  # peers (and LLMs no longer registered) with a recent record
        out.append(_weight(name, "peer" if name.startswith("did:") else "llm (removed)", _last_base(rows, name), a))
    return out


def _weight(name: str, kind: str, base: float | None, a: dict | None) -> dict:
    a = a or {"factor": 1.0, "verdicts": 0, "lean": None, "drift": None, "why": "no verdicts yet: full trust"}
    return {"validator": name, "kind": kind, "base_trust": base, "factor": a["factor"],
            "weight": None if base is None else round(base * a["factor"], 3), "verdicts": a["verdicts"],
            "lean": a["lean"], "drift": a["drift"], "why": a["why"]}


def _last_base(rows: list[tuple], name: str) -> float | None:
    """A peer's trust as its last recorded verdict had it (its reputation then)."""
    for _auto, validators_json, _rating in reversed(rows):
        try:
            said = json.loads(validators_json or "[]")
        except ValueError:
            continue
        for v in said if isinstance(said, list) else []:
            if isinstance(v, dict) and v.get("validator") == name:
                base = v.get("base_trust", v.get("trust"))
                return float(base) if isinstance(base, (int, float)) else None
    return None
