"""What each tick of the cycle showed the LLM and what came of it (protocols/web.md 4.4).

The cycle writes a tick's row inside transactions it makes anyway (``_think``'s
first one, the core outage log line, the checkpoint at the end), so a trace costs
no transaction of its own. Reads are for the mind page and ``meshnode mind
ticks``: ``listing`` without the prompt, ``show`` with the prompt split back into
its named contexts, the commands the tick ran (its ``cmd:*`` ``process_log``
rows) and the ids of those it held.
"""

from __future__ import annotations

import json
import sqlite3

from meshnode.base.errors import MeshnodeError
from meshnode.store.database import Database

MAX_MESSAGES = 256 * 1024  # characters of the prompt kept per tick
DEFAULT_KEEP = 200
_CUT = "\n[... cut: the trace keeps 256 KB of the prompt]"
_LIST = "tick, started_ms, duration_ms, mode, llm_id, llm_ms, wake_job, summary_json"


def _messages_json(messages: list[dict]) -> str:
    text = json.dumps(messages, ensure_ascii=False)
    if len(text) <= MAX_MESSAGES or not messages:
        return text
    last = dict(messages[-1])
    last["content"] = str(last.get("content", ""))[:max(0, len(str(last.get("content", ""))) - (len(text) - MAX_MESSAGES)
                                                         - len(_CUT) - 64)] + _CUT
    return json.dumps([*messages[:-1], last], ensure_ascii=False)[:MAX_MESSAGES]


def record(conn: sqlite3.Connection, tick: int, started_ms: int, mode: str, llm_id: str | None, llm_ms: int | None,
           wake_job: str | None, messages: list[dict], response_id: int | None = None, summary: dict | None = None,
           duration_ms: int | None = None, answer: str | None = None) -> None:
    """The tick's row, inside the caller's transaction; a tick number seen again (a checkpoint
    older than the traces) replaces the old row. ``answer``: only when no response row will hold it."""
    conn.execute("INSERT OR REPLACE INTO tick_traces (tick, started_ms, duration_ms, mode, llm_id, llm_ms, wake_job,"
                 " messages_json, response_id, summary_json, answer, log_first, log_last)"
                 " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT coalesce(max(id), 0) + 1 FROM process_log), ?)",
                 (tick, started_ms, duration_ms, mode, llm_id, llm_ms, wake_job, _messages_json(messages),
                  response_id, None if summary is None else json.dumps(summary, default=str),
                  None if answer is None else answer[:MAX_MESSAGES], None if duration_ms is None else _max_log(conn)))


def _max_log(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT coalesce(max(id), 0) FROM process_log").fetchone()[0]


def set_response(conn: sqlite3.Connection, tick: int, response_id: int) -> None:
    conn.execute("UPDATE tick_traces SET response_id = ? WHERE tick = ?", (response_id, tick))


def finish(conn: sqlite3.Connection, tick: int, duration_ms: int, summary: dict) -> None:
    """The end of the tick: its duration, its summary, and the last process_log row it wrote."""
    conn.execute("UPDATE tick_traces SET duration_ms = ?, summary_json = ?, log_last = ? WHERE tick = ?",
                 (duration_ms, json.dumps(summary, default=str), _max_log(conn), tick))


def prune(conn: sqlite3.Connection, keep: int) -> int:
    """Keep the newest ``keep`` traces ([cognition] keep_tick_traces)."""
    return conn.execute("DELETE FROM tick_traces WHERE tick <= (SELECT tick FROM tick_traces ORDER BY tick DESC"
                        " LIMIT 1 OFFSET ?)", (max(1, int(keep)),)).rowcount


def last_tick(db: Database) -> int:
    return db.conn.execute("SELECT coalesce(max(tick), 0) FROM tick_traces").fetchone()[0]


def _row(r: tuple) -> dict:
    tick, started, duration, mode, llm_id, llm_ms, wake_job, summary = r
    return {"tick": tick, "started_ms": started, "duration_ms": duration, "mode": mode, "llm_id": llm_id,
            "llm_ms": llm_ms, "wake_job": wake_job, "summary": json.loads(summary) if summary else None}


def listing(db: Database, limit: int = 50, before: int | None = None) -> list[dict]:
    """The newest ticks first (``before``: a tick number), without their prompts."""
    rows = db.conn.execute(f"SELECT {_LIST} FROM tick_traces WHERE tick < ? ORDER BY tick DESC LIMIT ?",
                           (before if before is not None else 2**62, max(1, min(int(limit), 500)))).fetchall()
    return [_row(r) for r in rows]


def split_contexts(messages: list[dict]) -> list[dict]:
    """The prompt as the named parts it was built of: the system prompt, then each ``## `` section."""
    out = []
    for m in messages:
        content = str(m.get("content") or "")
        if m.get("role") == "system":
            out.append({"title": "System prompt", "text": content})
            continue
        for part in ("\n\n" + content).split("\n\n## ")[1:] if content.startswith("## ") else [content]:
            title, _, body = part.partition("\n")
            out.append({"title": title, "text": body} if content.startswith("## ") else
                       {"title": m.get("role", "user"), "text": part})
    return out


def show(db: Database, tick: int) -> dict:
    """One tick in full (``tick_not_found`` when pruned or never traced)."""
    q = db.conn.execute
    row = q(f"SELECT {_LIST}, messages_json, response_id, log_first, log_last, answer FROM tick_traces WHERE tick = ?",
            (int(tick),)).fetchone()
    if row is None:
        raise MeshnodeError("tick_not_found", f"no trace of tick {tick} (the newest [cognition] keep_tick_traces"
                                              " ticks are kept)")
    out = _row(row[:8])
    messages_json, response_id, first, last, answer = row[8:]
    messages = json.loads(messages_json)
    commands = []
    if first is not None:
        for name, value, status in q("SELECT name, value, status FROM process_log WHERE id >= ? AND id <= ?"
                                     " AND name LIKE 'cmd:%' ORDER BY id", (first, last if last is not None else 2**62)):
            try:
                value = json.loads(value)
            except (TypeError, ValueError):
                pass
            commands.append({"name": name, "status": status, "value": value})
    response = None
    if response_id is not None:
        r = q("SELECT id, content, llm_id, confidence, novelty_score, auto_pass, self_validation, rating, distribution,"
              " validators, reflection, timestamp FROM llm_recent_responses WHERE id = ?", (response_id,)).fetchone()
        if r is not None:
            names = ("id", "content", "llm_id", "confidence", "novelty_score", "auto_pass", "self_validation",
                     "rating", "distribution", "validators", "reflection", "timestamp")
            response = dict(zip(names, r))
            for k in ("distribution", "validators"):
                try:
                    response[k] = json.loads(response[k]) if response[k] else None
                except ValueError:
                    pass
    held = [i for (i,) in q("SELECT id FROM held_commands WHERE tick = ? ORDER BY id", (int(tick),))]
    return {**out, "contexts": split_contexts(messages), "messages": messages,
            "answer": response["content"] if response else answer, "commands": commands, "held": held,
            "response": response, "response_id": response_id}
