"""The store side of reputation, reading: current scores, the graph of published
statements, the trust every consumer should use, and what the CLI shows.

Read-only; safe on the reader connection of a running node, and from the
command line while a node runs (SQLite WAL).
"""

from __future__ import annotations

import json
from typing import Iterable

from meshnode.base.container import format_ms
from meshnode.base.errors import MeshnodeError
from meshnode.domain.reputation.model import DEFAULT_PARAMS, DAY_MS, Params, PeerScore, ReputationError, decay, trust_level
from meshnode.records.reputation.records import check_did, state_of_row
from meshnode.domain.reputation.statements import TRUST_CLASS, Statement, newest_statements, statement_of
from meshnode.domain.reputation.transitive import DEFAULT_TRANSITIVE, Reach, TransitiveParams, reach
from meshnode.domain.reputation.weights import gossip_app_score
from meshnode.store import names as store_names
from meshnode.store.database import Database, sql_errors

STATEMENT_MAX_AGE_MS = 30 * DAY_MS  # third-party statements older than this are not used
MAX_STATEMENTS = 50_000  # the newest this many trust containers are read at most

_LATEST = ("SELECT r.agent_id, r.reputation_score, r.updated_ms, r.capped_until_ms, r.counts FROM agent_reputation r"
           " JOIN (SELECT agent_id, MAX(id) AS id FROM agent_reputation GROUP BY agent_id) m ON m.id = r.id")


def local_did(db: Database) -> str | None:
    """This node's DID as ``init`` recorded it (no key needed)."""
    with sql_errors("reading the identity"):
        row = db.conn.execute("SELECT id FROM identity ORDER BY rowid LIMIT 1").fetchone()
    return row[0] if row else None


def direct_states(db: Database, *, now_ms: int, params: Params = DEFAULT_PARAMS) -> dict[str, PeerScore]:
    """Every agent with direct evidence, its state decayed to ``now_ms``."""
    with sql_errors("reading reputation"):
        rows = db.conn.execute(_LATEST).fetchall()
    return {did: decay(state_of_row(tuple(rest), now_ms), now_ms, params) for did, *rest in rows}


def statements(db: Database, *, now_ms: int, max_age_ms: int = STATEMENT_MAX_AGE_MS,
               about: str | None = None, limit: int = MAX_STATEMENTS) -> list[Statement]:
    """Usable trust statements held in the store (each container verified again as it is
    read; unusable ones are skipped), newer than ``max_age_ms``, optionally about one agent."""
    with sql_errors("reading trust statements"):
        dids = [r[0] for r in db.conn.execute(
            "SELECT did FROM containers WHERE class = ? AND timestamp_ms >= ?"
            " ORDER BY timestamp_ms DESC, did DESC LIMIT ?", (TRUST_CLASS, now_ms - max_age_ms, limit))]
    out = []
    for did in dids:
        try:
            c = db.load_container(did, now_ms=now_ms)
            if c is None:
                continue
            s = statement_of(c)
        except MeshnodeError:  # re-verification failed, or not a usable statement
            continue
        if about is None or s.subject == about:
            out.append(s)
    return out


def trust_graph(db: Database, *, now_ms: int, max_age_ms: int = STATEMENT_MAX_AGE_MS) -> dict[str, dict[str, float]]:
    """signer -> subject -> score: each signer's newest direct statement per subject."""
    return newest_statements(statements(db, now_ms=now_ms, max_age_ms=max_age_ms))


def reach_all(db: Database, *, now_ms: int, me: str | None = None, params: Params = DEFAULT_PARAMS,
              tparams: TransitiveParams = DEFAULT_TRANSITIVE,
              max_age_ms: int = STATEMENT_MAX_AGE_MS) -> dict[str, Reach]:
    me = me if me is not None else (local_did(db) or "")
    direct = {did: s.score for did, s in direct_states(db, now_ms=now_ms, params=params).items()}
    return reach(me, direct, trust_graph(db, now_ms=now_ms, max_age_ms=max_age_ms), tparams)


def effective_trust(db: Database, agents: Iterable[str] | None = None, *, now_ms: int, me: str | None = None,
                    params: Params = DEFAULT_PARAMS, tparams: TransitiveParams = DEFAULT_TRANSITIVE,
                    max_age_ms: int = STATEMENT_MAX_AGE_MS) -> dict[str, float]:
    """The trust consumers use: direct (decayed to now) where this node has evidence,
    else transitive. Agents it knows nothing about are left out (use the prior, or weight 0).
    Reads every usable statement in the window: call it per decision, not per message."""
    reached = reach_all(db, now_ms=now_ms, me=me, params=params, tparams=tparams, max_age_ms=max_age_ms)
    wanted = reached.keys() if agents is None else set(agents) & reached.keys()
    return {did: reached[did].value for did in sorted(wanted)}


# --- what the CLI shows ------------------------------------------------------------


def _names(db: Database) -> dict[str, str]:
    return store_names.named(db)  # petnames, then announced names


def _summary(did: str, r: Reach, states: dict[str, PeerScore], names: dict[str, str], now_ms: int) -> dict:
    state = states.get(did)
    return {
        "did": did,
        "name": names.get(did),
        "score": round(r.value, 6),
        "trust_level": trust_level(r.value),
        "basis": r.basis,
        "via": list(r.path[:-1]),
        "updated_at": format_ms(state.updated_ms) if state and 0 <= state.updated_ms else None,
        "capped_until": format_ms(state.capped_until_ms) if state and state.capped(now_ms) else None,
        "counts": dict(sorted(state.counts.items())) if state else {},
        "gossip_score": round(gossip_app_score(r.value), 3),
    }


def reputation_rows(db: Database, *, now_ms: int, params: Params = DEFAULT_PARAMS,
                    tparams: TransitiveParams = DEFAULT_TRANSITIVE) -> list[dict]:
    """Every agent this node trusts or distrusts, directly or transitively, most trusted first."""
    states = direct_states(db, now_ms=now_ms, params=params)
    reached = reach_all(db, now_ms=now_ms, params=params, tparams=tparams)
    with sql_errors("reading peers"):
        names = _names(db)
    rows = [_summary(did, r, states, names, now_ms) for did, r in reached.items()]
    rows.sort(key=lambda r: (-r["score"], r["did"]))
    return rows


def reputation_detail(db: Database, did: str, *, now_ms: int, params: Params = DEFAULT_PARAMS,
                      tparams: TransitiveParams = DEFAULT_TRANSITIVE, history: int = 20) -> dict:
    """Everything behind one agent's trust: the current value and its basis, the
    evidence counts, recent updates, and what others have published about it."""
    check_did(did)
    states = direct_states(db, now_ms=now_ms, params=params)
    me = local_did(db)
    reached = reach_all(db, now_ms=now_ms, me=me, params=params, tparams=tparams)
    by_signer: dict[str, Statement] = {}
    for s in statements(db, now_ms=now_ms, about=did):
        old = by_signer.get(s.signer)
        if s.signer == me:  # this node's own statements are under "published"
            continue
        if old is None or (s.timestamp_ms, s.container_did) > (old.timestamp_ms, old.container_did):
            by_signer[s.signer] = s
    with sql_errors("reading reputation"):
        conn = db.conn
        names = _names(db)
        hist = conn.execute(
            "SELECT last_interaction, reputation_score, trust_level, notes, applied FROM agent_reputation"
            " WHERE agent_id = ? ORDER BY id DESC LIMIT ?", (did, max(1, history))).fetchall()
        evidence = conn.execute("SELECT kind, ref, at_ms FROM reputation_evidence WHERE did = ?"
                                " ORDER BY at_ms DESC, kind, ref LIMIT 50", (did,)).fetchall()
        published = conn.execute("SELECT container_did, score, at_ms FROM reputation_published WHERE did = ?",
                                 (did,)).fetchone()
    if did not in reached and not by_signer and not hist:
        raise ReputationError("no_reputation", f"nothing is known about the trust of {did}")
    out = _summary(did, reached[did], states, names, now_ms) if did in reached else {
        "did": did, "name": names.get(did), "score": None, "trust_level": None, "basis": None, "via": [],
        "updated_at": None, "capped_until": None, "counts": {}, "gossip_score": None}
    out["history"] = [{"at": at, "score": score, "trust_level": level, "notes": notes,
                       "applied": json.loads(applied) if applied else {}}
                      for at, score, level, notes, applied in hist]
    out["evidence"] = [{"kind": k, "ref": ref, "at": format_ms(at)} for k, ref, at in evidence]
    out["statements"] = [{"signer": s.signer, "signer_name": names.get(s.signer), "score": s.score,
                          "basis": s.basis, "at": format_ms(s.timestamp_ms), "container_did": s.container_did}
                         for s in sorted(by_signer.values(), key=lambda s: (-s.score, s.signer))]
    out["published"] = None if published is None else {
        "container_did": published[0], "score": published[1], "at": format_ms(published[2])}
    return out
