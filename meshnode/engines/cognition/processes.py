"""External processes of the cognitive core (seed 000: "process list/start/stop/mark/cleanup").

A process is an allowlisted program run through the action gate
(``meshnode/engines/gate``: no shell, a scratch copy of the workspace as its folder,
whose file changes come back as drafts; a clean environment, an
unprivileged user, limits on time, CPU, memory, processes and output; no
network unless allowed). The LLM never sees a process's output directly: when it
ends, its summary goes to the ``processes`` row and to ``process_log``, which
the next tick shows (seed 000, step 1). ``mark`` closes a result the LLM has
handled; ``cleanup`` deletes marked ones. A node that stops kills its
processes, and so does a crash (``gate.sandbox``); rows left ``running`` by a
crash become ``lost`` at the next start, when what still ran is killed.

Work that must not hold up a tick runs ``beside`` it (an outside MCP tool's call,
``mcp_tools.calls``): the tick waits a small budget for it; if it is not done
by then it becomes a process like the others (a ``processes`` row whose argv
is the tool and its arguments, ``[running]`` in context 4, stopped with
``process_stop``), and its result or error comes as ``process:ID`` at a later
tick.

Starting and stopping need the node's event loop, so the cycle runs these
two commands itself (like the mesh commands); list, mark and cleanup are
plain store handlers (``handlers/processes.py``). Their types: ``kinds/processes.py``.
"""

from __future__ import annotations

import json
import logging
from typing import Awaitable, Callable

import trio

from meshnode.engines.cognition.commands import Command
from meshnode.base.errors import MeshnodeError
from meshnode.engines.gate.tools import DESTRUCTIVE
from meshnode.store.database import Database

log = logging.getLogger("meshnode.engines.cognition")

ASYNC_TYPES = ("process_start", "process_stop")
MAX_RUNNING = 8
MAX_BESIDE = 16  # calls running beside the ticks at once (outside tools: a slow server's calls pile up here)


class Processes:
    """The running processes of one node; lives in the cycle's nursery. Each runs through the
    action gate (``Gate.command``): a scratch copy of the workspace, whose changes become drafts."""

    def __init__(self, store, gate, clock, max_timeout_s: float):
        self.store, self.gate, self.clock = store, gate, clock
        self.finished = 0  # processes ended so far (the cycle's idle mode may wait for the next)
        self.max_timeout_s = max_timeout_s
        self._scopes: dict[int, trio.CancelScope] = {}
        self._nursery: trio.Nursery | None = None
        self._beside = 0  # calls running beside the ticks

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        try:  # a background write: a database held by another process must not hold up a stop
            await self.store.write_background(_mark_lost, self.clock())
        except MeshnodeError as exc:
            log.warning("could not mark processes of an earlier run lost: %s", exc.reason)
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            await trio.sleep_forever()

    async def handle(self, cmd: Command) -> dict:
        try:
            if cmd.type == "process_start":
                result = await self.start(cmd.args["program"], list(cmd.args.get("args", [])),
                                          task_id=cmd.args.get("task_id"), timeout_s=cmd.args.get("timeout_s"))
            else:
                result = await self.stop(cmd.args["id"])
        except MeshnodeError as exc:
            return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "error", "error": exc.reason, "code": exc.code}
        return {"cmd_id": cmd.cmd_id, "type": cmd.type, "status": "ok", "result": result}

    async def start(self, program: str, args: list[str], *, task_id: int | None = None,
                    timeout_s: float | None = None, llm_id: str | None = None) -> dict:
        if self._nursery is None:
            raise MeshnodeError("no_processes", "processes are not running on this node")
        if len(self._scopes) >= MAX_RUNNING:
            raise MeshnodeError("too_many_processes", f"{MAX_RUNNING} processes already run; stop one first")
        argv = [program, *args]
        self.gate.guard("process_start", {"argv": argv})  # the loop detector and the call limit apply too
        if self.gate.precheck(argv) == DESTRUCTIVE:  # refused now, not in a later tick
            raise MeshnodeError("needs_confirmation", "this command needs a person's confirmation: ask for it with"
                                " run_command, which waits for the answer without blocking you")
        limit = min(float(timeout_s or self.max_timeout_s), self.max_timeout_s)
        process_id = await self.store.write(_started, argv, self.clock(), task_id, llm_id)
        scope = trio.CancelScope()
        self._scopes[process_id] = scope
        self._nursery.start_soon(self._run, process_id, argv, limit, scope)
        return {"id": process_id, "argv": argv, "timeout_s": limit}

    async def stop(self, process_id: int) -> dict:
        scope = self._scopes.get(process_id)
        if scope is None:
            raise MeshnodeError("not_running", f"process {process_id} is not running")
        scope.cancel()
        return {"id": process_id, "stopping": True}

    def running(self) -> list[int]:
        return sorted(self._scopes)

    async def beside(self, label: list[str], work: Callable[[], Awaitable[dict]], budget_s: float) -> dict:
        """``work()``'s result if it ends within ``budget_s`` (its MeshnodeError raised), else
        ``{"status": "running", "process": ID}``: it runs on as process ID (``label``: its argv),
        and its result or error comes as ``process:ID`` at a later tick. Without the cycle's
        nursery (processes not running) ``work`` runs to its end here."""
        if self._nursery is None:
            return await work()
        if self._beside >= MAX_BESIDE:
            raise MeshnodeError("too_many_calls", f"{MAX_BESIDE} calls already run beside your ticks; wait for"
                                " their results (context 4) or stop one with process_stop")
        call, scope = _Beside(), trio.CancelScope()
        self._beside += 1
        self._nursery.start_soon(self._run_beside, call, work, scope, label)
        with trio.move_on_after(budget_s):
            await call.done.wait()
        try:
            if call.done.is_set():
                return call.outcome()
            call.process_id = await self.store.write(_started, label, self.clock(), None, None)
            self._scopes[call.process_id] = scope
        except BaseException:
            scope.cancel()  # not recorded (the store failed, or the tick was cancelled): nobody would read it
            raise
        finally:
            call.detached.set()
        return {"status": "running", "process": call.process_id, "tool": label[0],
                "note": f"still running after {budget_s:g} s: it goes on beside your ticks; its result comes as"
                        f" process:{call.process_id} in a later tick (process_stop stops it)"}

    async def _run_beside(self, call: _Beside, work: Callable[[], Awaitable[dict]], scope: trio.CancelScope,
                          label: list[str]) -> None:
        try:
            with scope:
                try:
                    call.result = await work()
                except MeshnodeError as exc:
                    call.error = exc
                except Exception as exc:  # a bug here must not take the cycle (and the node) down
                    log.exception("%s beside the tick", label[0])
                    call.error = MeshnodeError("internal", f"{type(exc).__name__}: {exc}"[:300])
            call.done.set()
            await call.detached.wait()
            if call.process_id is None:  # it ended within the budget: the caller took its result
                return
            self._scopes.pop(call.process_id, None)
            if call.error is not None:
                code = call.error.code
                status = "timeout" if code.endswith("timeout") else "failed"
                summary = {"tool": label[0], "code": code, "error": call.error.reason}
            elif call.result is None:
                status, summary = "stopped", {"tool": label[0], "stopped": True}
            else:
                status, summary = "exited", {"tool": label[0], **call.result}
            with trio.CancelScope(shield=True):
                await self.store.write(_ended, call.process_id, status, None, summary, self.clock())
            self.finished += 1
        finally:
            self._beside -= 1

    async def _run(self, process_id: int, argv: list[str], timeout_s: float, scope: trio.CancelScope) -> None:
        outcome = None
        try:
            with scope:
                outcome = await self.gate.command(argv, timeout_s=timeout_s)
        except MeshnodeError as exc:  # refused at spawn (e.g. the program vanished)
            summary, status, code = {"error": exc.reason}, "failed", None
        except Exception as exc:  # a bug here must not take the cycle (and the node) down
            log.exception("process %d", process_id)
            summary, status, code = {"error": f"{type(exc).__name__}: {exc}"[:300]}, "failed", None
        else:
            if outcome is None:
                summary, status, code = {"stopped": True, "note": "file changes of a stopped process are dropped"}, \
                    "stopped", None
            else:
                result, drafted, ignored = outcome
                summary, code = {**result.summary(), "drafted": drafted, "ignored": ignored}, result.exit_code
                status = "timeout" if result.timed_out else ("exited" if code == 0 else "failed")
        finally:
            self._scopes.pop(process_id, None)
        with trio.CancelScope(shield=True):
            await self.store.write(_ended, process_id, status, code, summary, self.clock())
        self.finished += 1


class _Beside:
    """One call running beside the ticks: its outcome once ``done``; ``detached`` once the caller
    took it (within the budget) or recorded it as a process (``process_id``)."""

    def __init__(self):
        self.done, self.detached = trio.Event(), trio.Event()
        self.result: dict | None = None
        self.error: MeshnodeError | None = None
        self.process_id: int | None = None

    def outcome(self) -> dict:
        if self.error is not None:
            raise self.error
        if self.result is None:
            raise MeshnodeError("stopped", "the call was stopped")
        return self.result


def _started(db: Database, argv: list[str], now: int, task_id: int | None, llm_id: str | None) -> int:
    with db.transaction() as conn:
        return conn.execute("INSERT INTO processes (argv, started_at, task_id, llm_id) VALUES (?, ?, ?, ?)",
                            (json.dumps(argv), now, task_id, llm_id)).lastrowid


def _ended(db: Database, process_id: int, status: str, code: int | None, summary: dict, now: int) -> None:
    value = json.dumps({"process": process_id, "status": status, "exit_code": code, **summary},
                       ensure_ascii=False, default=str).encode("utf-8", "backslashreplace").decode("utf-8")[:65536]
    with db.transaction() as conn:
        conn.execute("UPDATE processes SET status = ?, exit_code = ?, result = ?, ended_at = ? WHERE id = ?",
                     (status, code, value, now, process_id))
        conn.execute("INSERT INTO process_log (name, value, tags, status) VALUES (?, ?, ?, ?)",
                     (f"process:{process_id}", value, json.dumps(["process"]),
                      {"exited": "ok", "timeout": "timeout", "stopped": "close"}.get(status, "error")))


def _mark_lost(db: Database, now: int) -> None:
    with db.transaction() as conn:
        conn.execute("UPDATE processes SET status = 'lost', ended_at = ? WHERE status = 'running'", (now,))

