"""The store side of reputation, writing: evidence into ``agent_reputation``, the
network's counters folded in, trust containers published and taken in.

Functions take a :class:`~meshnode.store.database.Database` and run in the
store's worker thread (``await store.write(record_evidence, did, events, now_ms=...)``).
Every update appends one ``agent_reputation`` row holding the new score and the
model's state (the newest row per agent is current; ``store/trust.py`` reads
it), and keeps the newest ``HISTORY_ROWS`` rows per agent. The model itself is
:mod:`meshnode.domain.reputation.model`; nothing here changes a number it computes.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Iterable

from meshnode.base.container import Container, format_ms
from meshnode.base.container.schema import did as did_check
from meshnode.base.errors import IdentityError
from meshnode.base.identity.did import did_to_peer_id
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.reputation.model import (
    DEFAULT_PARAMS,
    EQUIVOCATION,
    Evidence,
    Params,
    PeerScore,
    ReputationError,
    apply_all,
    decay,
    evidence_ref,
    trust_level,
)
from meshnode.domain.reputation.publishing import Candidate, PublishPolicy, is_due
from meshnode.domain.reputation.statements import build_trust, statement_of
from meshnode.store.database import Database, sql_errors
from meshnode.store.sharing import friends

HOUR_MS = 60 * 60 * 1000
HISTORY_ROWS = 100
LIVENESS_PERIOD_MS = HOUR_MS  # one liveness observation per hour heard, or per hour dead


def check_did(did: str) -> None:
    if did_check(did):
        raise ReputationError("bad_did", f"{str(did)[:80]!r} is not a DID")


# --- the state as stored -----------------------------------------------------------


def load_state(conn: sqlite3.Connection, did: str, now_ms: int) -> PeerScore | None:
    """The stored state of ``did`` (not decayed), or None when it has no row. A row
    written without model columns (by hand, or an older writer) counts as fresh at ``now_ms``."""
    row = conn.execute("SELECT reputation_score, updated_ms, capped_until_ms, counts FROM agent_reputation"
                       " WHERE agent_id = ? ORDER BY id DESC LIMIT 1", (did,)).fetchone()
    return None if row is None else state_of_row(row, now_ms)


def state_of_row(row: tuple, now_ms: int) -> PeerScore:
    score, updated_ms, capped_until_ms, counts = row
    try:
        counts = {k: int(v) for k, v in json.loads(counts or "{}").items()}
    except (ValueError, TypeError, AttributeError):
        counts = {}
    score = min(1.0, max(0.0, float(score or 0.0)))
    return PeerScore(score, now_ms if updated_ms is None else int(updated_ms), int(capped_until_ms or 0), counts)


def _ensure_peer(conn: sqlite3.Connection, did: str) -> None:
    """agent_reputation.agent_id references agent_peers: make a bare row for an agent the
    node has not met (known only from evidence or statements). An existing row is left alone."""
    try:
        peer_id = did_to_peer_id(did)
    except IdentityError:
        peer_id = None
    conn.execute("INSERT INTO agent_peers (id, peer_id, source) VALUES (?, ?, 'exchange')"
                 " ON CONFLICT (id) DO NOTHING", (did, peer_id))


def _write(conn: sqlite3.Connection, did: str, state: PeerScore, applied: dict[str, int], now_ms: int,
           note: str) -> None:
    conn.execute(
        "INSERT INTO agent_reputation (agent_id, reputation_score, trust_level, notes, last_interaction,"
        " updated_ms, capped_until_ms, counts, applied) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (did, state.score, trust_level(state.score), note, format_ms(now_ms), state.updated_ms,
         state.capped_until_ms, json.dumps(dict(sorted(state.counts.items()))), json.dumps(applied, sort_keys=True)),
    )
    conn.execute("DELETE FROM agent_reputation WHERE agent_id = ? AND id NOT IN"
                 " (SELECT id FROM agent_reputation WHERE agent_id = ? ORDER BY id DESC LIMIT ?)",
                 (did, did, HISTORY_ROWS))


def _record(conn: sqlite3.Connection, did: str, events: list[Evidence], now_ms: int,
            params: Params) -> PeerScore | None:
    """Apply the events not seen before (by ref); None when there were none."""
    fresh = []
    for ev in events:
        if ev.ref is not None:
            cur = conn.execute("INSERT INTO reputation_evidence (did, kind, ref, at_ms) VALUES (?, ?, ?, ?)"
                               " ON CONFLICT DO NOTHING", (did, ev.kind, ev.ref, ev.at_ms))
            if cur.rowcount == 0:
                continue
        fresh.append(ev)
    if not fresh:
        return None
    state = load_state(conn, did, now_ms) or PeerScore(params.prior, min(ev.at_ms for ev in fresh))
    state = decay(apply_all(state, fresh, params), now_ms, params)
    applied: dict[str, int] = {}
    for ev in fresh:
        applied[ev.kind] = applied.get(ev.kind, 0) + ev.count
    _write(conn, did, state, applied, now_ms, ", ".join(f"{k} x{n}" for k, n in sorted(applied.items())))
    return state


# --- evidence ----------------------------------------------------------------------


def record_evidence(db: Database, did: str, events: Iterable[Evidence], *, now_ms: int,
                    params: Params = DEFAULT_PARAMS) -> PeerScore | None:
    """Apply ``events`` about ``did`` and store the result; returns the new state (None
    when every event had been recorded before). Events with a ``ref`` count once."""
    check_did(did)
    events = list(events)
    for ev in events:  # unknown kinds fail before anything is written
        if ev.kind != EQUIVOCATION and ev.kind not in params.rules:
            raise ReputationError("unknown_evidence", f"unknown evidence kind {ev.kind!r}")
    if not events:
        return None
    with db.transaction() as conn:
        _ensure_peer(conn, did)
        return _record(conn, did, events, now_ms, params)


def record_equivocation(db: Database, did: str, evidence: str | bytes, *, now_ms: int,
                        params: Params = DEFAULT_PARAMS) -> PeerScore | None:
    """``did`` signed two conflicting statements; ``evidence`` is the DID of (or the bytes
    of) the object proving it, which the caller has verified. Recording the same evidence
    again changes nothing."""
    return record_evidence(db, did, [Evidence(EQUIVOCATION, now_ms, ref=evidence_ref(evidence))],
                           now_ms=now_ms, params=params)


def fold_observations(db: Database, *, now_ms: int, params: Params = DEFAULT_PARAMS,
                      period_ms: int = LIVENESS_PERIOD_MS,
                      expected: frozenset[str] | None = None) -> dict[str, PeerScore]:
    """Turn what the network layer counted (peer_standing) and heard (peer_liveness) since
    the last fold into evidence; returns the peers whose score changed. Idempotent: a
    watermark per peer, written in the same transaction, says what has been counted.

    * valid / invalid containers: the growth of the counters. The counters live in the
      running node and restart at zero with it; a counter below its watermark means a
      restart, and everything counted since then is new.
    * liveness: one ``liveness_ok`` per whole hour between heartbeats heard (state ok or
      quiet, up to the last one heard), one ``liveness_dead`` per whole hour in state dead
      (up to now); stale counts neither way. Partial hours carry over to the next fold.
      Liveness is heard one hop (a node knows the peers it is connected to), so a peer dead
      here may be alive and merely not connected: with ``expected`` given, dead hours count
      only for the peers in it and this node's friends (spawned children are friends); for any
      other peer, dead counts neither way, like stale.
    """
    if period_ms <= 0:
        raise ReputationError("bad_params", "the liveness period must be positive")
    changed: dict[str, PeerScore] = {}
    with db.transaction() as conn:
        rows = conn.execute(
            """
            SELECT p.id, s.valid, s.invalid, s.updated_at_ms, l.state, l.last_heard_ms, l.changed_at_ms,
                   w.valid, w.invalid, w.liveness_ms
            FROM agent_peers p
            LEFT JOIN peer_standing s ON s.did = p.id
            LEFT JOIN peer_liveness l ON l.did = p.id
            LEFT JOIN reputation_watermarks w ON w.did = p.id
            WHERE s.did IS NOT NULL OR l.did IS NOT NULL
            ORDER BY p.id
            """).fetchall()
        if expected is not None:
            expected = expected | frozenset(friends(db))
        for did, valid, invalid, standing_ms, state, heard_ms, changed_ms, w_valid, w_invalid, w_live in rows:
            if state == "dead" and expected is not None and did not in expected:
                state = "stale"  # not connected here is not gone: neither credit nor debit
            events, marks = _observations(now_ms, period_ms, valid or 0, invalid or 0, standing_ms, state,
                                          heard_ms, changed_ms, w_valid or 0, w_invalid or 0, w_live or 0)
            conn.execute("INSERT INTO reputation_watermarks (did, valid, invalid, liveness_ms) VALUES (?, ?, ?, ?)"
                         " ON CONFLICT (did) DO UPDATE SET valid = excluded.valid, invalid = excluded.invalid,"
                         " liveness_ms = excluded.liveness_ms", (did, *marks))
            if events:
                new = _record(conn, did, events, now_ms, params)
                if new is not None:
                    changed[did] = new
    return changed


def _observations(now_ms: int, period_ms: int, valid: int, invalid: int, standing_ms: int | None,
                  state: str | None, heard_ms: int | None, changed_ms: int | None, w_valid: int,
                  w_invalid: int, w_live: int) -> tuple[list[Evidence], tuple[int, int, int]]:
    """The evidence in one peer's counters beyond its watermarks, and the new watermarks (pure)."""
    events = []
    if valid < w_valid or invalid < w_invalid:
        w_valid = w_invalid = 0  # the node restarted and its counters with it
    at = min(now_ms, standing_ms) if standing_ms is not None else now_ms
    if valid > w_valid:
        events.append(Evidence("valid_container", max(0, at), valid - w_valid))
    if invalid > w_invalid:
        events.append(Evidence("invalid_container", max(0, at), invalid - w_invalid))
    if state is not None and changed_ms is not None:
        start = max(w_live, changed_ms)
        end = {"ok": heard_ms, "quiet": heard_ms, "dead": now_ms}.get(state)
        if end is None:  # stale: neither credit nor debit; nothing before now counts later
            w_live = max(w_live, now_ms)
        else:
            n = max(0, (min(end, now_ms) - start) // period_ms)
            w_live = start + n * period_ms
            if n:
                events.append(Evidence("liveness_ok" if state != "dead" else "liveness_dead", w_live, n))
    return events, (valid, invalid, w_live)


def refresh_decay(db: Database, *, now_ms: int, params: Params = DEFAULT_PARAMS, min_change: float = 0.005) -> int:
    """Write a decayed row for every agent whose score has drifted at least ``min_change``
    toward the prior since it was recorded (store/trust.py reads stored scores as they are);
    returns how many rows were written."""
    n = 0
    with db.transaction() as conn:
        rows = conn.execute(
            "SELECT r.agent_id, r.reputation_score, r.updated_ms, r.capped_until_ms, r.counts FROM agent_reputation r"
            " JOIN (SELECT agent_id, MAX(id) AS id FROM agent_reputation GROUP BY agent_id) m ON m.id = r.id"
            " ORDER BY r.agent_id").fetchall()
        for did, *rest in rows:
            state = state_of_row(tuple(rest), now_ms)
            new = decay(state, now_ms, params)
            if abs(new.score - state.score) >= min_change:
                _write(conn, did, new, {}, now_ms, "decay")
                n += 1
    return n


# --- trust containers --------------------------------------------------------------


def publish_trust(db: Database, key: NodeKey, did: str, *, now_ms: int,
                  params: Params = DEFAULT_PARAMS) -> Container:
    """Sign this node's current view of ``did`` as a ``trust`` container, store it and
    remember it (the next one names it as previous_version). The caller gossips it."""
    check_did(did)
    with sql_errors("reading reputation"):
        conn = db.conn
        state = load_state(conn, did, now_ms)
        if state is None:
            raise ReputationError("no_reputation", f"this node has no evidence about {did}; nothing to publish")
        state = decay(state, now_ms, params)
        refs = [r[0] for r in conn.execute("SELECT ref FROM reputation_evidence WHERE did = ? AND ref LIKE 'did:%'"
                                           " ORDER BY at_ms DESC, ref LIMIT 256", (did,))]
        row = conn.execute("SELECT announce_did FROM agent_peers WHERE id = ?", (did,)).fetchone()
        prev = conn.execute("SELECT container_did FROM reputation_published WHERE did = ?", (did,)).fetchone()
    c = build_trust(key, did, state.score, now_ms=now_ms, counts=state.counts, evidence=refs,
                    capped_until_ms=state.capped_until_ms, announce_did=row[0] if row else None,
                    previous=prev[0] if prev else None)
    db.put_container(c, received_at_ms=now_ms)
    with db.transaction() as conn:
        conn.execute("INSERT INTO reputation_published (did, container_did, score, at_ms) VALUES (?, ?, ?, ?)"
                     " ON CONFLICT (did) DO UPDATE SET container_did = excluded.container_did,"
                     " score = excluded.score, at_ms = excluded.at_ms", (did, c.did, state.score, now_ms))
    return c


def publish_candidates(db: Database, *, now_ms: int, known=frozenset(),
                       params: Params = DEFAULT_PARAMS) -> list[Candidate]:
    """Every agent with a local score, as ``reputation.publishing`` weighs it: the score decayed
    to now, the last published statement, the evidence behind it, and when the first and the
    newest evidence were taken in (rows that applied evidence, not decay rows; of the rows kept)."""
    with sql_errors("reading reputation"):
        rows = db.conn.execute(
            "SELECT r.agent_id, r.reputation_score, r.updated_ms, r.capped_until_ms, r.counts, p.score, p.at_ms,"
            " m.first_ms, m.last_ms FROM agent_reputation r"
            " JOIN (SELECT agent_id, MAX(id) AS id, MIN(updated_ms) AS first_ms,"
            "  MAX(CASE WHEN COALESCE(applied, '{}') != '{}' THEN updated_ms END) AS last_ms"
            "  FROM agent_reputation GROUP BY agent_id) m ON m.id = r.id"
            " LEFT JOIN reputation_published p ON p.did = r.agent_id ORDER BY r.agent_id").fetchall()
    out = []
    for did, score, updated, capped, counts, published, at_ms, first_ms, last_ms in rows:
        state = decay(state_of_row((score, updated, capped, counts), now_ms), now_ms, params)
        first = now_ms if first_ms is None else int(first_ms)
        out.append(Candidate(did, state.score, published, at_ms, sum(state.counts.values()), first,
                             first if last_ms is None else int(last_ms), did in known))
    return out


def publish_due(db: Database, *, now_ms: int, params: Params = DEFAULT_PARAMS, min_change: float = 0.05,
                max_age_ms: int = 24 * HOUR_MS) -> list[str]:
    """Agents whose trust would be (re)published if worth it: never published, moved at least
    ``min_change`` since, or last published ``max_age_ms`` ago or more (``publishing.is_due``)."""
    policy = PublishPolicy(min_change=min_change, max_age_ms=max_age_ms)
    return [c.did for c in publish_candidates(db, now_ms=now_ms, params=params) if is_due(c, now_ms, policy)]


def ingest_trust(db: Database, c: Container, *, now_ms: int, received_from: str | None = None) -> bool:
    """Keep a verified ``trust`` container from a peer (it joins the transitive graph);
    ReputationError when it is not a usable statement, False when already held."""
    statement_of(c)
    return db.put_container(c, received_at_ms=now_ms, received_from=received_from)
