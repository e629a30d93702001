"""The contexts of a tick: concentration mode, the notes modes, and the budgets."""

from __future__ import annotations

import json

from meshnode.engines.cognition import contexts
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.notes import make_note
from meshnode.store import Database

T0 = 1_800_000_000_000


def user_part(db: Database) -> str:
    return contexts.build(db, now_ms=T0, tick=1, recent_k=5, mode="normal", llm_id="x")[1]["content"]


def setting(db: Database, name: str, value) -> None:
    with db.transaction() as conn:
        conn.execute("INSERT INTO config (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                     (f"cycle.{name}", json.dumps(value)))


def test_concentration_shows_only_matching_responses(tmp_path):
    db = Database(tmp_path / "c.db")
    try:
        with db.transaction() as conn:
            conn.executemany("INSERT INTO llm_recent_responses (role, content, tags, emotions) VALUES ('assistant', ?, ?, ?)",
                             [("about consensus", '["bft"]', '["curiosity:4"]'),
                              ("about lunch", '["food"]', '["curiosity:5"]'),
                              ("anxious consensus", '["bft"]', '["anxiety:3"]')])
        assert all(t in user_part(db) for t in ("about consensus", "about lunch", "anxious consensus"))
        setting(db, "concentration", {"tags": ["bft"], "emotions": ["curiosity:>=3"], "match": "and"})
        text = user_part(db)
        assert "about consensus" in text and "about lunch" not in text and "anxious consensus" not in text
        setting(db, "concentration", {"tags": ["bft"], "emotions": ["curiosity:>=5"], "match": "or"})
        text = user_part(db)
        assert all(t in text for t in ("about consensus", "about lunch", "anxious consensus"))
        assert contexts.concentrated({"tags": ["x"]}, "not json", None) is False
    finally:
        db.close()


def test_notes_manual_shows_ids_and_auto_shows_what_the_filter_lets_through(tmp_path):
    db = Database(tmp_path / "n.db")
    key = NodeKey(bytes(32))
    try:
        low = make_note(key, "low priority chatter", now_ms=T0, priority=0, source="system")
        high = make_note(key, "urgent: the committee is down", now_ms=T0 + 1, priority=9, source="system")
        for n in (low, high):
            db.put_container(n, received_at_ms=T0)
        manual = user_part(db)
        assert low.did in manual and high.did in manual and "urgent" not in manual  # ids, not texts
        setting(db, "mode", "auto")
        setting(db, "notes_filter", {"min_priority": 5})
        auto = user_part(db)
        assert "urgent: the committee is down" in auto and "low priority chatter" not in auto
    finally:
        db.close()


def test_every_context_keeps_to_its_budget(tmp_path):
    db = Database(tmp_path / "b.db")
    try:
        with db.transaction() as conn:
            conn.executemany("INSERT INTO llm_memory (content) VALUES (?)", [("m" * 400,) for _ in range(50)])
        text = user_part(db)
        memory = text.split("## Your memory (context 8)\n", 1)[1]
        assert len(memory) <= contexts.BUDGET["memory"] and memory.endswith(contexts.CUT)
    finally:
        db.close()


def test_pinned_entries_stay_in_view_until_unpinned(tmp_path):
    from meshnode.engines.cognition import executor
    from meshnode.engines.cognition.commands import extract
    from meshnode.domain.knowledge import make_concept, make_diary_entry

    db = Database(tmp_path / "p.db")
    key = NodeKey(bytes(32))
    try:
        entry = make_diary_entry(key, "the committee needs four members", now_ms=T0)
        concept = make_concept(key, "quorum", now_ms=T0, description="more than two thirds")
        for c in (entry, concept):
            db.put_container(c, received_at_ms=T0)

        def do(kind: str, target: str):
            cmd = extract('# Commands:\n{"cmd_id": "p", "type": "%s", "args": {"id": "%s"}}\n' % (kind, target)).commands[0]
            return executor.run(db, key, T0, cmd)

        assert "Pinned entries" not in user_part(db)
        assert do("pin", entry.did)["status"] == "ok" and do("pin", concept.did)["status"] == "ok"
        text = user_part(db)
        assert "the committee needs four members" in text and "quorum: more than two thirds" in text
        assert do("pin", "did:hmp:container:unotheld")["status"] == "error"
        do("unpin", entry.did)
        assert "the committee needs four members" not in user_part(db)
    finally:
        db.close()
