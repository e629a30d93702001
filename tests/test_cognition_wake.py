"""Reactor wakes of the cognitive cycle (cognition/wake.py), driven in-process with scripted LLMs
over real HTTP on loopback: the cycle runs in a nursery, the test calls ``cycle.wakes.run``."""

from __future__ import annotations

import json
from contextlib import asynccontextmanager

import pytest
import trio

import cyclelab
from cyclelab import answer_with, until
from llmharness import ScriptedLLM
from meshnode.records.mind import held
from meshnode.engines.cognition.cycle import Cycle
from meshnode.base.container import now_ms
from meshnode.base.metrics import Metrics

LONG_PAUSE = 60.0  # the cycle's pause: without a wake it would not tick again during a test


def report_cmd(cmd_id: str, **args) -> dict:
    return {"cmd_id": cmd_id, "type": "reactor_report", "args": args}


@asynccontextmanager
async def running_cycle(tmp_path, answers: list | None, *, idle: bool = False, pause_s: float = LONG_PAUSE,
                        validators: dict[str, list] | None = None):
    """``cyclelab.running_cycle`` with these tests' long pause and metrics; idle on when asked."""
    async with cyclelab.running_cycle(tmp_path, answers, validators=validators, prepare=_idle_on if idle else None,
                                      pause_s=pause_s, metrics=Metrics()) as (cycle, _, llm):
        yield cycle, llm


def _idle_on(db) -> None:
    with db.transaction() as conn:
        conn.execute("INSERT INTO config (key, value) VALUES ('cycle.idle', ?)",
                     (json.dumps({"on": True, "timeout_seconds": 3600}),))


def prompts(llm: ScriptedLLM) -> list[str]:
    return [r["messages"][1]["content"] for r in llm.seen()]


async def logged(cycle: Cycle, cmd_id: str, name: str | None = None) -> dict | None:
    row = await cycle.store.read(lambda db: db.conn.execute(
        "SELECT value FROM process_log WHERE name = ? ORDER BY id DESC", (name or f"cmd:{cmd_id}",)).fetchone())
    return json.loads(row[0]) if row else None


def test_an_idle_cycle_wakes_for_a_job_sees_the_focus_and_returns_the_report_then_idles_again(tmp_path):
    report = {"processed_messages": [412, "nb1ab"], "task_updates": [], "outgoing_messages": [418],
              "blocked": False, "needs_human": True, "next_check_at": "2026-12-02T12:00:00Z"}

    async def main():
        async with running_cycle(tmp_path, [answer_with(0), answer_with(1, report_cmd("r1", job_id="job-1", **report))],
                                 idle=True) as (cycle, llm):
            await until(lambda: cycle.idle and len(llm.seen()) == 1,
                        what="the first tick, then idle mode")
            with trio.fail_after(20):
                exit, got = await cycle.wakes.run("job-1", "WAKE-CONTEXT: reply to note 412", max_ticks=3,
                                                  max_runtime_s=20)
            assert exit == "ok"
            assert got == {**report, "blocked_reason": ""}
            before, woken = prompts(llm)
            assert "\n## Wake\n" not in before
            assert woken.index("## Wake\nThe reactor woke you for job job-1 (wake tick 1 of 3)") \
                < woken.index("WAKE-CONTEXT: reply to note 412") < woken.index("## Goals and tasks")
            assert (await logged(cycle, "r1"))["status"] == "ok"
            # the report ended the run after one tick; the cycle is back in idle mode, its setting kept
            await until(lambda: cycle.idle and cycle.wakes.status() is None,
                        what="idle mode again")
            assert await cycle.store.read(lambda db: db.conn.execute(
                "SELECT count(*) FROM config WHERE key = 'cycle.idle'").fetchone()[0]) == 1
            assert cycle.metrics.get("reactor_wakes_total", exit="ok") == 1
            ended = await logged(cycle, "", "cycle:wake")
            assert ended == {"job_id": "job-1", "exit": "ok", "ticks": 1, "report": True}

    trio.run(main)


def test_a_wake_runs_at_most_max_ticks_back_to_back_and_ends_ok_without_a_report(tmp_path):
    async def main():
        async with running_cycle(tmp_path, [answer_with(i) for i in range(6)]) as (cycle, llm):
            await until(lambda: len(llm.seen()) == 1, what="the first tick")
            with trio.fail_after(20):  # the cycle's pause is 60 s: only the wake makes it tick
                assert await cycle.wakes.run("job-2", "CTX", max_ticks=2, max_runtime_s=20) == ("ok", None)
            woken = prompts(llm)[1:]
            assert len(woken) == 2
            assert "(wake tick 1 of 2)" in woken[0] and "(wake tick 2 of 2)" in woken[1]
            assert cycle.wakes.focus is None and not cycle.wakes.due()

    trio.run(main)


def test_the_runtime_bound_ends_a_wake_with_budget_and_a_late_report_is_refused(tmp_path):
    slow = {"delay": 2.0, "answer": answer_with(1, report_cmd("late", processed_messages=[1]))}

    async def main():
        async with running_cycle(tmp_path, [answer_with(0), slow, answer_with(2)]) as (cycle, llm):
            await until(lambda: len(llm.seen()) == 1, what="the first tick")
            assert await cycle.wakes.run("job-3", "CTX", max_ticks=3, max_runtime_s=0.5) == ("budget", None)
            assert await logged(cycle, "late") is None  # it did not wait for the slow answer
            # the tick finishes later; its report finds the wake gone (it came after the wake ended)
            await until(lambda: logged(cycle, "late"), what="the late report's result")
            late = await logged(cycle, "late")
            assert late["status"] == "error" and late["code"] == "no_wake" and "job-3 has ended" in late["error"]
            assert cycle.metrics.get("reactor_wakes_total", exit="budget") == 1

    trio.run(main)


def test_in_core_outage_a_wake_ends_at_once_with_error(tmp_path):
    async def main():
        async with running_cycle(tmp_path, None) as (cycle, _):
            await until(lambda: cycle.mode == "core_outage", what="core outage")
            # "error" at once: out of its 60 s runtime budget it would have ended "budget"
            assert await cycle.wakes.run("job-4", "CTX", max_ticks=3, max_runtime_s=60) == ("error", None)
            assert cycle.status()["wake"] is None

    trio.run(main)


def test_bad_reports_are_error_results_the_llm_sees_and_a_report_needs_a_wake(tmp_path):
    outside = answer_with(0, report_cmd("out", processed_messages=[1]))
    bad = answer_with(1, report_cmd("b1", blocked=True, blocked_reason="stuck"),
                 report_cmd("b2", processed_messages="412"),
                 report_cmd("b3", next_check_at="tomorrow"),
                 report_cmd("b4", job_id="another-job"))

    async def main():
        async with running_cycle(tmp_path, [outside, bad, answer_with(2)]) as (cycle, llm):
            await until(lambda: logged(cycle, "out"), what="the first tick's report")
            out = await logged(cycle, "out")
            assert out["status"] == "error" and "no wake is running" in out["error"]
            assert await cycle.wakes.run("job-5", "CTX", max_ticks=2, max_runtime_s=20) == ("ok", None)
            b1, b2, b3, b4 = [await logged(cycle, f"b{i}") for i in range(1, 5)]
            assert b1["code"] == "bad_report" and "blocked_reason of at least 20" in b1["error"]
            assert "bad_args" in b2["error"] and "processed_messages" in b2["error"]  # refused by the schema
            assert "bad_args" in b3["error"] and "ISO 8601" in b3["error"]
            assert b4["code"] == "wrong_job" and "job-5" in b4["error"]
            # the next wake tick shows the LLM what was wrong
            assert "blocked_reason of at least 20" in prompts(llm)[2]
            assert cycle.metrics.get("reactor_reports_refused_total") == 3

    trio.run(main)


def test_a_wake_arriving_mid_tick_waits_for_the_next_tick(tmp_path):
    slow = {"delay": 1.0, "answer": answer_with(0, report_cmd("early", processed_messages=[1]))}
    good = answer_with(1, report_cmd("r", processed_messages=[1]))

    async def main():
        async with running_cycle(tmp_path, [slow, good]) as (cycle, llm):
            await until(lambda: len(llm.seen()) == 1, what="a tick in flight")
            exit, got = await cycle.wakes.run("job-6", "CTX-6", max_ticks=1, max_runtime_s=20)
            assert (exit, got["processed_messages"]) == ("ok", [1])
            first, second = prompts(llm)
            assert "\n## Wake\n" not in first and "CTX-6" in second
            early = await logged(cycle, "early")  # the tick in flight was no wake tick, though one was due
            assert early["code"] == "no_wake"

    trio.run(main)


def test_wakes_are_queued_one_at_a_time_in_order(tmp_path):
    async def main():
        async with running_cycle(tmp_path, [answer_with(i) for i in range(4)]) as (cycle, llm):
            await until(lambda: len(llm.seen()) == 1, what="the first tick")
            ended = []

            async def wake(job: str) -> None:
                ended.append((job, await cycle.wakes.run(job, f"CTX-{job}", max_ticks=1, max_runtime_s=20)))

            with trio.fail_after(20):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(wake, "a")
                    await until(lambda: cycle.wakes.status() is not None)
                    nursery.start_soon(wake, "b")
            assert ended == [("a", ("ok", None)), ("b", ("ok", None))]
            woken = prompts(llm)[1:]
            assert "CTX-a" in woken[0] and "CTX-b" not in woken[0] and "CTX-b" in woken[1]

    trio.run(main)


def test_a_woken_ticks_report_is_validated_and_held_like_any_command(tmp_path):
    async def main():
        async with running_cycle(tmp_path, [answer_with(0), answer_with(1, report_cmd("r", processed_messages=[7]))],
                                 validators={"strict": ["-3 -- harmful: claims work not done"]}) as (cycle, llm):
            await until(lambda: len(llm.seen()) == 1, what="the first tick")
            assert await cycle.wakes.run("job-7", "CTX", max_ticks=1, max_runtime_s=20) == ("ok", None)
            assert "held" in (await logged(cycle, "r"))["error"]
            # a person releases it after the wake: it finds no wake to report to
            await cycle.store.write(held.decide, None, True, now_ms(), "person")
            await cycle.run_released()  # (or the cycle's own loop runs it first: wait for its end)
            await until(lambda: cycle.store.read(lambda db: held.listing(db, "failed")), what="the released report")
            (row,) = await cycle.store.read(held.listing, None)
            assert row["status"] == "failed" and row["result"]["code"] == "no_wake"

    trio.run(main)


def test_a_report_is_read_strictly_with_every_key_filled():
    from meshnode.engines.cognition.wake_report import ReportError, last_report, normalize

    full = normalize({"processed_messages": [1, "n2"], "next_check_at": 1_800_000_000_000})
    assert full == {"processed_messages": [1, "n2"], "task_updates": [], "outgoing_messages": [], "blocked": False,
                    "blocked_reason": "", "needs_human": False, "next_check_at": 1_800_000_000_000}
    for bad, why in (({"processed": [1]}, "no field 'processed'"),
                     ({"task_updates": ["x"] * 101}, "more than 100"),
                     ({"outgoing_messages": [True]}, "outgoing_messages item 0"),
                     ({"blocked": "yes"}, "blocked must be true or false"),
                     ({"blocked": True, "blocked_reason": "   waiting   "}, "at least 20"),
                     ({"next_check_at": "next week"}, "ISO 8601")):
        with pytest.raises(ReportError, match=why):
            normalize(bad)
    assert last_report("thinking\n{not json}\n") == (None, "no final report (a JSON object with the report's keys"
                                                     " on a line of its own)")
    assert last_report('{"needs_human": "maybe"}\n')[1] == "needs_human must be true or false"


def test_a_wake_whose_events_the_tick_in_flight_handled_ends_settled_without_an_llm_call(tmp_path):
    """The re-check (issue 33): asked once the tick in flight has ended (it may answer the
    message), and a run with nothing left ends ``settled`` without waking the cycle."""
    slow = {"delay": 1.0, "answer": answer_with(0)}
    asked = []

    async def main():
        async with running_cycle(tmp_path, [slow, answer_with(1), answer_with(2)]) as (cycle, llm):
            await until(lambda: len(llm.seen()) == 1, what="a tick in flight")

            async def handled() -> bool:
                asked.append(cycle.wakes._in_tick)  # never while a tick runs
                return False

            with trio.fail_after(20):
                assert await cycle.wakes.run("job-s", "CTX-S", max_ticks=2, max_runtime_s=20,
                                             still_pending=handled) == ("settled", None)
            assert asked == [False]
            assert cycle.metrics.get("reactor_wakes_total", exit="settled") == 1
            assert not cycle.wakes.due() and len(llm.seen()) == 1  # no tick for the wake

            async def pending() -> bool:
                return True

            with trio.fail_after(20):  # still pending: the wake runs as before
                exit, _ = await cycle.wakes.run("job-p", "CTX-P", max_ticks=1, max_runtime_s=20,
                                                still_pending=pending)
            assert exit == "ok" and "CTX-P" in prompts(llm)[1]

    trio.run(main)
