"""tick_traces (protocols/web.md 4.4): each tick's prompt, answer, commands and held ids, recorded by
a real cycle thinking with a scripted LLM over HTTP on loopback; a core-outage tick without a
prompt; pruning to [cognition] keep_tick_traces; the prompt split back into its contexts."""

from __future__ import annotations

from contextlib import asynccontextmanager

from cyclelab import answer_with, running_cycle, until
from llmharness import distinct_answers
from meshnode.records.mind import tick_traces
from meshnode.base.errors import MeshnodeError
from meshnode.store import Database


@asynccontextmanager
async def thinking(tmp_path, answers: list | None, keep: int = 200, validators: dict | None = None):
    """A cycle with a short pause keeping ``keep`` traces: yields ``(cycle, store)``."""
    async with running_cycle(tmp_path, answers, validators=validators, pause_s=0.05,
                             keep_traces=keep) as (cycle, store, _):
        yield cycle, store


async def test_a_tick_is_traced_with_its_contexts_answer_and_commands(tmp_path):
    answers = [answer_with(0, {"cmd_id": "m1", "type": "llm_memory_add", "args": {"text": "remember this"}},
                           {"cmd_id": "x1", "type": "no_such_command", "args": {}}),
               *distinct_answers(6)[1:]]
    async with thinking(tmp_path, answers) as (cycle, store):
        await until(lambda: cycle.ticks >= 3, what="three ticks")
        listing = await store.read(tick_traces.listing, 50)
        one = await store.read(tick_traces.show, 1)
    assert [r["tick"] for r in listing][-1] == 1 and listing[0]["tick"] > listing[-1]["tick"]  # newest first
    assert "messages" not in listing[0] and "messages_json" not in listing[0]
    assert one["mode"] in ("normal", "isolated") and one["llm_id"] == "main" and one["llm_ms"] >= 0
    assert one["duration_ms"] >= one["llm_ms"] and one["summary"]["tick"] == 1 and one["summary"]["commands"] == 1
    titles = [c["title"] for c in one["contexts"]]
    assert titles[0] == "System prompt" and "Commands (context 2)" in titles and "System (context 7)" in titles
    assert one["messages"][1]["content"].startswith("## Commands (context 2)")
    assert one["answer"] == answers[0] and one["response"]["id"] == one["response_id"]
    assert [(c["name"], c["status"]) for c in one["commands"]] == [("cmd:m1", "ok"), ("cmd:x1", "error")]
    assert one["commands"][0]["value"]["result"]["id"] >= 1 and one["held"] == []


async def test_a_repeated_answer_is_kept_in_its_trace(tmp_path):
    same = "The mesh is quiet and I have nothing new to add about quorums today."
    async with thinking(tmp_path, [same]) as (cycle, store):
        await until(lambda: cycle.ticks >= 3, what="three ticks")
        rows = await store.read(tick_traces.listing, 50)
        repeated = [r for r in rows if r["summary"] and r["summary"].get("repeated")]
        assert repeated, rows
        shown = await store.read(tick_traces.show, repeated[-1]["tick"])
    assert shown["answer"] == same and shown["response"] is None


async def test_held_commands_are_named_in_their_ticks_trace(tmp_path):
    answers = [answer_with(0, {"cmd_id": "m1", "type": "llm_memory_add", "args": {"text": "held"}}),
               *distinct_answers(4)[1:]]
    async with thinking(tmp_path, answers, validators={"judge": ["-1 no"]}) as (cycle, store):
        await until(lambda: cycle.ticks >= 2, what="two ticks")
        one = await store.read(tick_traces.show, 1)
    assert len(one["held"]) == 1 and one["summary"]["ran"] is False
    assert one["commands"][0]["value"]["held"] == one["held"][0]


async def test_core_outage_ticks_are_traced_without_a_prompt_and_pruned(tmp_path):
    async with thinking(tmp_path, None, keep=3) as (cycle, store):
        await until(lambda: cycle.ticks >= 6, what="six outage ticks")
        await until(lambda: len(trio_free_listing(tmp_path)) <= 3, what="pruning")
        rows = await store.read(tick_traces.listing, 50)
        last = await store.read(tick_traces.show, rows[0]["tick"])
    assert len(rows) <= 3 and rows[0]["mode"] == "core_outage" and rows[0]["llm_id"] is None
    assert last["messages"] == [] and last["contexts"] == [] and last["answer"] is None
    assert last["summary"]["mode"] == "core_outage" and last["duration_ms"] is not None


def trio_free_listing(tmp_path) -> list:
    db = Database(tmp_path / "mind.db")
    try:
        return tick_traces.listing(db, 50)
    finally:
        db.close()


def test_show_refuses_an_unknown_tick_and_listing_pages(tmp_path):
    db = Database(tmp_path / "t.db")
    try:
        with db.transaction() as conn:
            for t in range(1, 6):
                tick_traces.record(conn, t, 1000 * t, "normal", "x", 5, None,
                                   [{"role": "system", "content": "sys"},
                                    {"role": "user", "content": "## A (context 1)\nbody a\n\n## B\nline 1\nline 2"}],
                                   duration_ms=9, summary={"tick": t})
            assert tick_traces.prune(conn, 4) == 1
        assert [r["tick"] for r in tick_traces.listing(db, 2)] == [5, 4]
        assert [r["tick"] for r in tick_traces.listing(db, 2, before=4)] == [3, 2]
        assert tick_traces.show(db, 5)["contexts"] == [{"title": "System prompt", "text": "sys"},
                                                       {"title": "A (context 1)", "text": "body a"},
                                                       {"title": "B", "text": "line 1\nline 2"}]
        for gone in (1, 99):
            try:
                tick_traces.show(db, gone)
            except MeshnodeError as exc:
                assert exc.code == "tick_not_found"
            else:
                raise AssertionError(f"tick {gone} shown")
        huge = [{"role": "user", "content": "z" * (tick_traces.MAX_MESSAGES + 1000)}]
        with db.transaction() as conn:
            tick_traces.record(conn, 6, 0, "normal", "x", 1, None, huge)
        stored = db.conn.execute("SELECT length(messages_json) FROM tick_traces WHERE tick = 6").fetchone()[0]
        assert stored <= tick_traces.MAX_MESSAGES and tick_traces.show(db, 6)["messages"][0]["content"].endswith(
            "256 KB of the prompt]")
    finally:
        db.close()
