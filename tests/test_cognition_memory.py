"""Memory tiers: the short-term store stays short (least novel archived first, the newest always kept),
llm_memory is LRU-bounded, pruning is logged, and the session checkpoint survives."""

from __future__ import annotations

from meshnode.engines.cognition.cycle import KEEP_MEMORY, KEEP_RESPONSES, _checkpoint_of, _prune_and_checkpoint
from meshnode.store import Database


def test_pruning_keeps_the_newest_and_the_most_novel(tmp_path):
    db = Database(tmp_path / "m.db")
    try:
        total = KEEP_RESPONSES + 50
        with db.transaction() as conn:
            conn.executemany("INSERT INTO llm_recent_responses (role, content, novelty_score) VALUES ('assistant', ?, ?)",
                             [(f"r{i}", (i * 37 % 100) / 100) for i in range(total)])
            conn.executemany("INSERT INTO llm_memory (content) VALUES (?)", [(f"m{i}",) for i in range(KEEP_MEMORY + 5)])
        _prune_and_checkpoint(db, {"ticks": 7, "streak": 1})
        kept = dict(db.conn.execute("SELECT content, novelty_score FROM llm_recent_responses"))
        assert len(kept) == KEEP_RESPONSES
        assert all(f"r{i}" in kept for i in range(total - 20, total))  # the newest stay, whatever their novelty
        gone = {f"r{i}": (i * 37 % 100) / 100 for i in range(total) if f"r{i}" not in kept}
        assert max(gone.values()) <= min(v for k, v in kept.items() if int(k[1:]) < total - 20)
        assert db.conn.execute("SELECT count(*) FROM llm_memory").fetchone()[0] == KEEP_MEMORY
        assert db.conn.execute("SELECT min(content) FROM llm_memory WHERE content IN ('m0', 'm4')").fetchone()[0] is None
        assert db.conn.execute("SELECT count(*) FROM process_log WHERE name = 'prune'").fetchone()[0] == 1
        assert _checkpoint_of(db) == {"ticks": 7, "streak": 1}
    finally:
        db.close()
