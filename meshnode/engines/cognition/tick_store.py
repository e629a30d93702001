"""The cycle's steps in the store's writer thread (split out of ``cycle``): storing an answer and
running its commands (``_think``), the tick's log lines and trace, the anti-stagnation ratings,
pruning the short-term memory and the session checkpoint, and the small reads the cycle makes.
Pure functions of a ``Database``; the cycle calls them through ``store.read``/``write``.
"""

from __future__ import annotations

import hashlib
import json

from meshnode.engines.cognition import (assessment, error_levels, executor, gate_commands, isolation, mcp_commands, mesh_commands, processes, sending, stagnation, wake_report)
from meshnode.records.mind import held, tick_traces
from meshnode.engines.cognition.commands import Command, extract
from meshnode.engines.cognition.validation import Verdict
from meshnode.base.identity.keys import NodeKey
from meshnode.store.database import Database

STARTING, NORMAL, ISOLATED, CORE_OUTAGE = "starting", "normal", "isolated", "core_outage"
DEFERRED_TYPES = frozenset((*mesh_commands.MESH_TYPES, *processes.ASYNC_TYPES, *gate_commands.ASYNC_TYPES,
                            *mcp_commands.ASYNC_TYPES,
                            *wake_report.ASYNC_TYPES))


def _deferred(cmd: Command) -> bool:
    """Run by the cycle after the answer (needs the event loop): the mesh, processes, gate tools,
    and anything that leaves the node (the gate's outbound level)."""
    return cmd.type in DEFERRED_TYPES or sending.leaves_node(cmd) or mesh_commands.needs_mesh(cmd)



def _log(db: Database, name: str, value, status: str = "ok", llm_id: str | None = None) -> None:
    with db.transaction() as conn:
        _log_row(conn, name, value, status, llm_id)


def _log_row(conn, name: str, value, status: str, llm_id: str | None) -> None:
    conn.execute("INSERT INTO process_log (name, value, status, llm_id) VALUES (?, ?, ?, ?)",
                 (name, _text(json.dumps(value, ensure_ascii=False, default=str))[:65536], status, llm_id))


def _text(s: str) -> str:
    """Text the database can hold: what is not valid UTF-8 (lone surrogates from odd file names)
    is written as escapes."""
    return s.encode("utf-8", "backslashreplace").decode("utf-8")


FACT_CHECK_BELOW = 0.7


def _fact_checks(conn, response_id: int, tick: int, facts) -> None:
    """Every unverified fact is kept (status pending); one below FACT_CHECK_BELOW confidence also
    becomes a fact-check task the agent will see among its tasks."""
    for n, fact in enumerate(facts):
        fact_id = f"t{tick}-r{response_id}-{fact.id or n}"[:128]
        task_id = None
        if fact.confidence < FACT_CHECK_BELOW:
            task_id = conn.execute(
                "INSERT INTO tasks (name, description, tags, priority) VALUES (?, ?, ?, ?)",
                (f"fact-check: {fact.claim[:120]}", fact.why_unverified or fact.context,
                 json.dumps(["fact-check"]), fact.priority)).lastrowid
        conn.execute("INSERT OR IGNORE INTO unverified_facts (id, context_msg_id, claim, context_snippet, confidence,"
                     " sources_json, why_unverified, status, assigned_task_id) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?)",
                     (fact_id, response_id, fact.claim, fact.context, fact.confidence, json.dumps(list(fact.sources)),
                      fact.why_unverified, task_id))


def _digest(context: str) -> str:
    """The contexts without the system section (time and tick change every tick)."""
    kept = [part for part in context.split("\n## ") if not part.startswith("System (context 7)")]
    return hashlib.sha256("\n## ".join(kept).encode()).hexdigest()


def _rate(db: Database, agent: str, plan: stagnation.Plan, before: float, after: float) -> None:
    """Record the strategy's effect in `ratings` (the strategy row is created on first use)."""
    with db.transaction() as conn:
        row = conn.execute("SELECT id FROM stagnation_strategies WHERE name = ?", (plan.strategy,)).fetchone()
        strategy_id = row[0] if row else conn.execute(
            "INSERT INTO stagnation_strategies (name, description, source, tags) VALUES (?, ?, 'internal', ?)",
            (plan.strategy, plan.notice, json.dumps([plan.diagnosis]))).lastrowid
        conn.execute("INSERT INTO ratings (agent_id, target_type, target_id, rating, comment)"
                     " VALUES (?, 'stagnation_strategy', ?, ?, ?)",
                     (agent, strategy_id, stagnation.effect(after), f"novelty {before:.2f} -> {after:.2f}"))


KEEP_RESPONSES = 200  # llm_recent_responses beyond these, the least novel first, are archived away
KEEP_MEMORY = 1000  # llm_memory entries beyond these, the least recently updated, are dropped (LRU)


def _prune_and_checkpoint(db: Database, state: dict, trace_end: dict | None = None,
                          keep_traces: int = tick_traces.DEFAULT_KEEP) -> None:
    """Short-term memory stays short: pruning is logged in process_log; the session checkpoint
    lets the cycle resume after a crash. ``trace_end`` ({tick, duration_ms, summary}) ends the
    tick's trace; the traces beyond ``keep_traces`` go."""
    with db.transaction() as conn:
        if trace_end is not None:
            tick_traces.finish(conn, **trace_end)
            tick_traces.prune(conn, keep_traces)
        extra = conn.execute("SELECT count(*) FROM llm_recent_responses").fetchone()[0] - KEEP_RESPONSES
        archived = conn.execute(
            "DELETE FROM llm_recent_responses WHERE id IN (SELECT id FROM llm_recent_responses"
            " WHERE id NOT IN (SELECT id FROM llm_recent_responses ORDER BY id DESC LIMIT 20)"
            " ORDER BY coalesce(novelty_score, 0), id LIMIT ?)", (max(0, extra),)).rowcount if extra > 0 else 0
        extra = conn.execute("SELECT count(*) FROM llm_memory").fetchone()[0] - KEEP_MEMORY
        dropped = conn.execute("DELETE FROM llm_memory WHERE id IN (SELECT id FROM llm_memory ORDER BY"
                               " coalesce(updated_at, created_at), id LIMIT ?)",
                               (max(0, extra),)).rowcount if extra > 0 else 0
        conn.execute("INSERT INTO config (key, value) VALUES ('cycle.checkpoint', ?) ON CONFLICT (key) DO UPDATE"
                     " SET value = excluded.value", (json.dumps(state),))
    if archived or dropped:
        _log(db, "prune", {"responses_archived": archived, "memory_dropped": dropped})


def _outage(db: Database, summary: dict, trace: dict, keep_traces: int = tick_traces.DEFAULT_KEEP) -> None:
    """A core-outage tick: its log line and its trace (no prompt: no LLM was asked), the oldest
    traces pruned, in one transaction."""
    with db.transaction() as conn:
        _log_row(conn, "tick", summary, "offline", None)
        tick_traces.record(conn, summary["tick"], **trace, summary=summary)
        tick_traces.prune(conn, keep_traces)


PAUSED = "mind.paused"  # a person's pause, kept across restarts (not a cycle.* setting: the LLM cannot lift it)


def set_paused(db: Database, paused: bool, by: str) -> None:
    """Pause or resume (``Cycle.pause``/``resume``): the config row and the process_log line that
    context 4 shows the agent (``cycle:pause``/``cycle:resume``), in one transaction."""
    with db.transaction() as conn:
        if paused:
            conn.execute("INSERT INTO config (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE"
                         " SET value = excluded.value", (PAUSED, json.dumps({"by": by})))
        else:
            conn.execute("DELETE FROM config WHERE key = ?", (PAUSED,))
        _log_row(conn, "cycle:pause" if paused else "cycle:resume",
                 {"by": by, "note": "a person paused you: no tick until they resume" if paused else
                  "a person resumed you"}, "ok", None)


def paused_of(db: Database) -> str | None:
    """Who paused the cycle (None: not paused)."""
    row = db.conn.execute("SELECT value FROM config WHERE key = ?", (PAUSED,)).fetchone()
    if row is None:
        return None
    try:
        return str(json.loads(row[0]).get("by", "?"))
    except (ValueError, AttributeError):
        return "?"


def _checkpoint_of(db: Database) -> dict | None:
    row = db.conn.execute("SELECT value FROM config WHERE key = 'cycle.checkpoint'").fetchone()
    try:
        return json.loads(row[0]) if row else None
    except ValueError:
        return None


def _unread(db: Database) -> int:
    return db.conn.execute("SELECT count(*) FROM notes WHERE read = 0 AND hidden = 0").fetchone()[0]


def _wake_up(db: Database) -> None:
    """Idle mode ends when one of its conditions is met (seed 000): the next tick runs normally."""
    with db.transaction() as conn:
        conn.execute("DELETE FROM config WHERE key = 'cycle.idle'")
    _log(db, "wake", {"reason": "idle ended"})


def _recent(db: Database, k: int) -> list[str]:
    return [r[0] for r in db.conn.execute("SELECT content FROM llm_recent_responses WHERE role = 'assistant'"
                                          " ORDER BY id DESC LIMIT ?", (k,))]


def _emotions(db: Database) -> list[str]:
    row = db.conn.execute("SELECT value FROM config WHERE key = 'cognition.emotions'").fetchone()
    try:
        known = json.loads(row[0]) if row else None
    except ValueError:
        known = None
    return known if isinstance(known, list) else list(assessment.DEFAULT_EMOTIONS)


def _think(db: Database, key: NodeKey, now: int, tick: int, llm_id: str, answer: str, score: float,
           verdict: Verdict | None, judged: assessment.Assessment | None = None, mode: str = NORMAL,
           trace: dict | None = None) -> dict:
    """Everything after the LLM answered and was judged, in one writer call: storage, commands, log.
    ``verdict`` None: the answer repeats a recent one. Commands the validators did not back are
    held for a person. In isolated mode the store-side commands that needed the mesh are recorded
    (``isolation``), to be revisited when the mesh is back. ``trace``: the tick's trace fields
    (``tick_traces.record``), written in the first transaction. Returns the summary, with the
    commands left for the cycle (``deferred``) and the stored answer's id (``response_id``)."""
    extraction = extract(answer)
    with db.transaction() as conn:
        if trace is not None:  # a repetition is not stored as a response: the trace keeps its answer
            tick_traces.record(conn, tick, **trace, answer=answer if verdict is None else None)
        if judged is None:
            conn.execute("INSERT INTO anti_stagnation_metrics (tick_id, novelty_score) VALUES (?, ?)",
                         (str(tick), score))
        else:
            conn.execute("INSERT INTO anti_stagnation_metrics (tick_id, novelty_score, new_ideas, refined_ideas,"
                         " discarded_ideas, emotions_json) VALUES (?, ?, ?, ?, ?, ?)",
                         (str(tick), score, len(judged.new_ideas), len(judged.refined_ideas),
                          len(judged.discarded_ideas), json.dumps(dict(judged.emotions))))
            conn.execute("INSERT INTO config (key, value) VALUES ('cognition.emotions', ?) ON CONFLICT (key)"
                         " DO UPDATE SET value = excluded.value", (json.dumps(assessment.grow(_emotions(db), judged)),))
    if verdict is None:  # a repetition: not stored again, its commands not run twice
        _log(db, "stagnation", {"tick": tick, "novelty": round(score, 3)}, "warning", llm_id)
        summary = {"tick": tick, "mode": mode, "novelty": score, "repeated": True, "commands": 0}
        _log(db, "tick", summary, "ok", llm_id)
        return {**summary, "response_id": None}
    facts = [f.__dict__ for f in extraction.facts]
    with db.transaction() as conn:
        cur = conn.execute("INSERT INTO llm_recent_responses (role, content, llm_id, confidence, unverified_facts_json,"
                     " novelty_score, auto_pass, self_validation, rating, distribution, validators)"
                     " VALUES ('assistant', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (answer, llm_id, extraction.confidence, json.dumps(facts, default=list), score,
                      int(verdict.auto_pass), int(verdict.self_validation), verdict.rating,
                      json.dumps(verdict.distribution), json.dumps(verdict.validators)))
        if judged is not None:
            conn.execute("UPDATE llm_recent_responses SET reflection = ?, new_ideas = ?, refined_ideas = ?,"
                         " discarded_ideas = ?, tags = ?, emotions = ? WHERE id = ?",
                         (judged.assessment, json.dumps(judged.new_ideas), json.dumps(judged.refined_ideas),
                          json.dumps(judged.discarded_ideas), json.dumps(judged.tags),
                          json.dumps([f"{n}:{v}" for n, v in judged.emotions]), cur.lastrowid))
        _fact_checks(conn, cur.lastrowid, tick, extraction.facts)
        if trace is not None:
            tick_traces.set_response(conn, tick, cur.lastrowid)
    deferred, ran = [], []
    if verdict.passes:
        results = []
        for cmd in extraction.commands:
            if _deferred(cmd):
                deferred.append(cmd)  # the cycle runs these (the mesh, processes, sends) after this
            else:
                results.append(executor.run(db, key, now, cmd))
                ran.append((_as_dict(cmd), results[-1]))
    else:  # held for a person: the validators did not back this answer, or none gave a verdict
        reason = verdict.why_held()
        with db.transaction() as conn:
            ids = held.hold(conn, tick, extraction.commands, "no_verdict" if verdict.no_verdict else "rejected",
                            reason, now)
        results = [{"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "error", "held": i,
                    "error": f"held (#{i}): {reason}"} for cmd, i in zip(extraction.commands, ids)]
    if mode == ISOLATED and ran:
        isolation.record_now(db, now, tick, ran)
    results += [{"cmd_id": e.cmd_id, "status": "error", "error": f"{e.code}: {e.reason}"} for e in extraction.errors]
    for r in results:
        _log(db, f"cmd:{r.get('cmd_id') or '?'}", r, "ok" if r["status"] == "ok" else "error", llm_id)
    error_levels.freeze(db, error_levels.failed_tasks(extraction.commands, results), llm_id)
    summary = {"tick": tick, "mode": mode, "novelty": round(score, 3), "repeated": False,
               "commands": len(extraction.commands), "refused": len(extraction.errors),
               "rating": verdict.rating, "auto_pass": verdict.auto_pass, "ran": verdict.passes,
               "through_mesh": len(deferred)}
    if verdict.set_aside:
        summary["set_aside"] = verdict.set_aside
    _log(db, "tick", summary, "ok", llm_id)
    return {**summary, "deferred": deferred, "response_id": cur.lastrowid}


def _as_dict(cmd: Command) -> dict:
    return {"cmd_id": cmd.cmd_id, "type": cmd.type, "args": cmd.args}


def _validation_history(db: Database, n: int) -> list[tuple]:
    """The last ``n`` stored answers' (auto_pass, validators, rating), oldest first."""
    rows = db.conn.execute("SELECT auto_pass, validators, rating FROM llm_recent_responses WHERE role = 'assistant'"
                           " ORDER BY id DESC LIMIT ?", (n,)).fetchall()
    return rows[::-1]
