"""Reactor wakes of the local cognitive core: one bounded episodic run at a time (design 9.1).

The reactor calls ``cycle.wakes.run(job_id, context_md, max_ticks=, max_runtime_s=)``. The run
waits its turn (one wake at a time, first come first served), then sets the cycle's ``wake``
event so the cycle leaves its idle mode or pause; the next ticks, at most ``max_ticks``, carry
the job's context as a ``## Wake`` section (``contexts.build(focus=)``), then the focus is cleared
and the cycle goes back to its usual idle mode or pause. A wake that arrives while a tick is
running waits for the next tick: the focus is taken only when a tick starts, never mid-tick.

Before its first focused tick a run asks ``still_pending`` (when given; the reactor reads the
store): a regular tick may have answered the message meanwhile (it ran while the run queued, or
the run waited for it to end). When nothing is left to do the run ends ``settled`` without
waking the cycle: no LLM call is spent on what was done.

What ends a run, and its exit:
- ``ok``: the agent's ``reactor_report`` command (the tick it came in finishes first), or its
  ticks used up (``error`` instead if none of them got an answer from an LLM, e.g. they crashed);
- ``error``: a tick in core outage (no LLM answers: the reactor must learn at once that this
  node cannot think, rather than wait for the budget);
- ``budget``: ``max_runtime_s`` passed (counted from when the run got the cycle, not while it
  queued); the tick then running finishes without the focus mattering any more, and a report it
  sends is refused ("no wake is running").

The woken ticks are ordinary ticks: their commands are validated, run or held exactly as any
other tick's. ``reactor_report`` is taken only during a wake's own tick; a held one a person
releases later finds no wake and says so. The cycle's hooks are a few lines (``tick``,
``_pause``, ``_run_deferred``, ``status``); everything else is here.
"""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Awaitable, Callable

import trio

from meshnode.engines.cognition import error_levels
from meshnode.engines.cognition.commands import Command
from meshnode.engines.cognition.wake_report import ReportError, normalize
from meshnode.base.errors import MeshnodeError
from meshnode.records.gmp.reads import GmpError, resolve

log = logging.getLogger("meshnode.engines.cognition.wake")

OUTAGE = "core_outage"  # cycle.CORE_OUTAGE (not imported: the cycle imports this module)


@dataclass
class _Run:
    job_id: str
    context_md: str
    max_ticks: int
    ticks: int = 0  # ticks begun with the focus
    answered: int = 0  # of them, those that ended with an LLM's answer
    exit: str | None = None
    report: dict | None = None
    done: trio.Event = field(default_factory=trio.Event)

    def finish(self, exit: str) -> None:
        if self.exit is None:
            self.exit = exit
        self.done.set()


class WakeSlot:
    """The cycle's wakes (``cycle.wakes``): one bounded run at a time, the others queued."""

    def __init__(self, cycle):
        self._cycle = cycle
        self._turn = trio.Lock()  # fair: queued wakes run in the order they came
        self._run: _Run | None = None  # the run that holds the cycle, if any
        self._ticking: _Run | None = None  # the run whose focus the current tick carries
        self._in_tick = False  # a tick (of any kind) is running
        self._tick_over = trio.Event()  # set when a tick ends

    async def run(self, job_id: str, context_md: str, *, max_ticks: int = 3, max_runtime_s: float = 600.0,
                  still_pending: Callable[[], Awaitable[bool]] | None = None) -> tuple[str, dict | None]:
        """Wake the cycle for one job; (exit, report) once the run has ended (see the module doc).
        ``still_pending``: asked once the run has its turn and no tick is running; False ends the
        run ``settled`` at once. Cancelling the caller ends the run (the focus is cleared) and propagates."""
        if isinstance(max_ticks, bool) or not isinstance(max_ticks, int) or max_ticks < 1:
            raise ValueError("max_ticks must be an integer >= 1")
        if not max_runtime_s > 0:
            raise ValueError("max_runtime_s must be > 0")
        async with self._turn:
            if still_pending is not None and not await self._still_pending(job_id, still_pending):
                self._count("reactor_wakes_total", exit="settled")
                log.info("wake %s settled: its events were handled before it ran", job_id)
                return "settled", None
            run = self._run = _Run(job_id, context_md, max_ticks)
            self._cycle.wake.set()
            try:
                with trio.move_on_after(max_runtime_s):
                    await run.done.wait()
            finally:
                self._run = None
            run.finish("budget")  # no-op if it ended by itself
        self._count("reactor_wakes_total", exit=run.exit)
        log.info("wake %s ended: %s after %d tick(s)%s", job_id, run.exit, run.ticks,
                 ", with a report" if run.report is not None else "")
        ended = {"job_id": job_id, "exit": run.exit, "ticks": run.ticks, "report": run.report is not None}
        try:  # the next tick shows it (context 4), and `meshnode mind` a person
            await self._cycle.store.write_background(_log_end, ended)
        except MeshnodeError as exc:  # the database busy with another process: the log line only is lost
            log.warning("wake %s: not logged: %s", job_id, exc.reason)
        return run.exit, run.report

    async def _still_pending(self, job_id: str, still_pending: Callable[[], Awaitable[bool]]) -> bool:
        """Whether the job's events still wait, asked after the tick running now (if any) ends:
        that tick may answer them. A failed read says yes (the wake runs, as before)."""
        while self._in_tick:
            await self._tick_over.wait()
        try:
            return bool(await still_pending())
        except MeshnodeError as exc:
            log.warning("wake %s: its events not re-checked: %s", job_id, exc.reason)
            return True

    def due(self) -> bool:
        """A run waits for a tick: the cycle skips its pause (and keeps its idle setting)."""
        return self._run is not None and self._run.exit is None

    @property
    def focus(self) -> str | None:
        """The ``## Wake`` section of the tick being built (None outside a wake)."""
        run = self._ticking
        if run is None or run is not self._run:
            return None
        return (f"The reactor woke you for job {run.job_id} (wake tick {run.ticks} of {run.max_ticks}). Do what"
                " the context below requires, within its hard limits; then send the reactor_report command"
                f' (with "job_id": "{run.job_id}") saying what you did. Status-only replies do not count.\n\n'
                + run.context_md)

    async def around(self, tick) -> dict:
        """Run one tick (``tick()``), with the focus if a wake is due when it starts."""
        self._in_tick = True
        try:
            return await self._around(tick)
        finally:
            self._in_tick = False
            self._tick_over.set()
            self._tick_over = trio.Event()

    async def _around(self, tick) -> dict:
        run = self._run if self.due() else None
        if run is None:
            return await tick()
        run.ticks += 1
        self._ticking = run
        try:
            summary = await tick()
        except BaseException:
            if run.ticks >= run.max_ticks:
                run.finish("ok" if run.answered else "error")
            raise
        finally:
            self._ticking = None
        if summary.get("mode") == OUTAGE:
            run.finish("error")
            return summary
        run.answered += 1
        if run.report is not None or run.ticks >= run.max_ticks:
            run.finish("ok")
        return summary

    async def take(self, cmd: Command) -> dict:
        """``record`` once the report's ``task_updates`` name tasks held here: each id the agent is
        shown (a short id, a lineage or version DID) becomes the task's lineage; one that names no
        task is an error result the LLM reads and may correct, not a claim the reactor later finds
        missing (which would alert the person for good)."""
        ids = cmd.args.get("task_updates") if isinstance(cmd.args, dict) else None
        if ids and isinstance(ids, list) and all(isinstance(i, str) for i in ids) and self._run is not None:
            found, unknown = await self._cycle.store.read(_task_lineages, ids)
            if unknown:
                self._count("reactor_reports_refused_total", reason="unknown_task")
                return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "error", "code": "unknown_task",
                        "error": "task_updates: " + "; ".join(unknown) + " (give the task ids the prompt shows)"}
            cmd = dataclasses.replace(cmd, args={**cmd.args, "task_updates": found})
        return self.record(cmd)

    def record(self, cmd: Command) -> dict:
        """The ``reactor_report`` command: kept for the running wake, or an error result the LLM sees."""
        run = self._ticking
        base = {"cmd_id": cmd.cmd_id, "type": cmd.type}
        if run is None or run is not self._run:
            why = "no wake is running" if run is None else f"wake {run.job_id} has ended (its runtime ran out)"
            self._count("reactor_reports_refused_total", reason="no_wake")
            return {**base, "status": "error", "code": "no_wake", "error": f"{why}; a report is for a ## Wake tick"}
        args = dict(cmd.args)
        job = args.pop("job_id", run.job_id)
        try:
            if job != run.job_id:
                raise ReportError("wrong_job", f"this report names job {job[:64]!r}; the running wake is {run.job_id}")
            report = normalize(args, self._cycle.clock())
        except ReportError as exc:
            self._count("reactor_reports_refused_total", reason=exc.code)
            return {**base, "status": "error", "code": exc.code, "error": exc.reason}
        run.report = report
        return {**base, "status": "ok", "result": {"job_id": run.job_id, "recorded": True,
                                                   "ends": "after this tick"}}

    def status(self) -> dict | None:
        run = self._run
        return None if run is None else {"job_id": run.job_id, "ticks": run.ticks, "max_ticks": run.max_ticks}

    def _count(self, name: str, **labels) -> None:
        metrics = getattr(self._cycle, "metrics", None)
        if metrics is not None:
            metrics.inc(name, **labels)


def _task_lineages(db, ids: list[str]) -> tuple[list[str], list[str]]:
    """(the lineage each id names, in order without repeats; why each unknown one names none)."""
    found, unknown = [], []
    for ident in ids:
        try:
            lineage = resolve(db, ident, "task")
        except GmpError as exc:
            unknown.append(f"{ident[:80]}: {exc.reason}")
            continue
        if lineage not in found:
            found.append(lineage)
    return found, unknown


def _log_end(db, ended: dict) -> None:
    with db.transaction() as conn:
        error_levels._log(conn, "cycle:wake", ended, "ok" if ended["exit"] == "ok" else "error")
