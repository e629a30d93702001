"""The command set against a store: every command runs through extraction and its handler,
read-only ones change nothing, and a bad argument or a missing row is an error, not a crash."""

from __future__ import annotations

import json

from meshnode.engines.cognition import executor
from meshnode.engines.cognition.command_types import command_names, command_type
from meshnode.engines.cognition.commands import extract
from meshnode.base.identity.keys import NodeKey
from meshnode.domain.notes import make_note
from meshnode.store import Database

T0 = 1_800_000_000_000
KEY = NodeKey(bytes(32))


def run(db: Database, *commands: dict) -> list[dict]:
    answer = "# Commands:\n" + "\n".join(json.dumps(c) for c in commands) + "\n# End of commands\n"
    result = extract(answer)
    assert not result.errors, result.errors
    return [executor.run(db, KEY, T0, c) for c in result.commands]


def snapshot(db: Database) -> dict:
    tables = [r[0] for r in db.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {t: db.conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables}


def test_every_command_type_has_a_handler_or_the_cycle_runs_it():
    from meshnode.engines.cognition.cycle import DEFERRED_TYPES

    missing = [n for n in command_names() if not executor.handles(n) and n not in DEFERRED_TYPES]
    assert missing == []
    assert not {n for n in DEFERRED_TYPES if executor.handles(n)}  # one way to run each


def test_read_only_commands_change_nothing_and_mutating_ones_do(tmp_path):
    db = Database(tmp_path / "e.db")
    try:
        note = make_note(KEY, "hello #mesh", now_ms=T0)
        db.put_container(note, received_at_ms=T0)
        before = snapshot(db)
        from meshnode.engines.cognition.cycle import DEFERRED_TYPES

        reads = [{"cmd_id": f"r{i}", "type": name, "args": {}} for i, name in enumerate(command_names())
                 if not command_type(name).mutating and not command_type(name).schema._required
                 and name not in DEFERRED_TYPES]  # the cycle runs those (test_gate_commands)
        results = run(db, *reads)
        assert all(r["status"] == "ok" for r in results), [r for r in results if r["status"] != "ok"]
        assert snapshot(db) == before
        tags = next(r for r in results if r["type"] == "tags_list")["result"]
        assert {"tag": "mesh", "uses": 1} in tags
        made = run(db, {"cmd_id": "m1", "type": "method_add", "args": {"name": "flashback", "description": "old entry"}},
                   {"cmd_id": "m2", "type": "rate", "args": {"kind": "thinking", "id": 1, "rating": 2}},
                   {"cmd_id": "m3", "type": "note_readmark", "args": {"id": note.did}},
                   {"cmd_id": "m4", "type": "rate", "args": {"kind": "stagnation", "id": 99, "rating": 1}},
                   {"cmd_id": "m5", "type": "llm_select", "args": {"name": "nobody"}})
        assert [r["status"] for r in made] == ["ok", "ok", "ok", "error", "error"]
        assert db.conn.execute("SELECT read FROM notes").fetchone() == (1,)
        assert db.conn.execute("SELECT rating FROM ratings").fetchall() == [(2,)]
    finally:
        db.close()
