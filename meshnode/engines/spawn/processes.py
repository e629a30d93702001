"""The child processes a running node started itself, waited on by it.

A child started directly (``launch``'s ``direct`` way: no unit, no start.sh) by a running parent
is the parent's own process: when it ends, only its parent can reap it, and an unreaped child
stays a zombie (``<defunct>``) for as long as the parent runs. So the node opens it with trio's
process API and waits on it in a system task (it must outlive the spawn job that started it); how
it ended is written to the child's ``run/node.exit`` (``launch.write_exit``), which ``children
list`` shows. When the node itself stops, the waiting ends and its children, in their own
sessions, run on (init reaps them). A child started by a CLI process (a stopped parent,
``children start``) is init's once that process exits: nothing to do here.
"""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path
from typing import Callable

import trio

from meshnode.base.container.timefmt import now_ms as _now_ms
from meshnode.base.errors import SpawnError
from meshnode.engines.spawn import launch

log = logging.getLogger("meshnode.engines.spawn")
MAX_ENDED = 256  # exit records kept in memory (each is in its child's home too)


class ChildProcesses:
    """``open`` a child (on the node's trio loop), ``exited`` for one it opened; ``ended``: pid -> how."""

    def __init__(self, clock: Callable[[], int] = _now_ms, argv: Callable[[Path], list[str]] = launch.direct_argv):
        self.clock, self.argv = clock, argv
        self.ended: dict[int, dict] = {}   # pid -> its exit record, for the pids opened here
        self._waiting: dict[int, trio.Event] = {}  # pid -> set once it ended and was reaped

    async def open(self, home: Path) -> int:
        """Start the child of ``home`` detached (own session, stdin closed, output to its console file)
        and wait on it in a system task; its pid (the child writes its pid file itself, once it holds
        its home). SpawnError start_failed."""
        home = Path(home)
        argv = self.argv(home)
        with open(launch.prepare_direct(home), "wb") as out:
            try:
                proc = await trio.lowlevel.open_process(argv, cwd=home, env=launch.child_env(),
                                                        stdin=subprocess.DEVNULL, stdout=out,
                                                        stderr=subprocess.STDOUT, start_new_session=True)
            except OSError as exc:
                raise SpawnError("start_failed", f"cannot start {argv[0]}: {exc.strerror or exc}") from None
        self._waiting[proc.pid] = trio.Event()
        trio.lowlevel.spawn_system_task(self._wait, home, proc, name=f"child process {proc.pid}")
        return proc.pid

    def exited(self, pid: int | None) -> bool:
        """The process ``pid`` opened here has ended (and was reaped)."""
        return pid in self.ended

    def running(self) -> list[int]:
        return sorted(self._waiting)

    async def wait(self, pid: int) -> dict | None:
        """Until the process ``pid`` opened here has ended; its exit record (None: not one of ours)."""
        if pid in self._waiting:
            await self._waiting[pid].wait()
        return self.ended.get(pid)

    async def _wait(self, home: Path, proc: trio.Process) -> None:
        code = await proc.wait()
        rec = launch.exit_record(proc.pid, code, self.clock())
        self.ended[proc.pid] = rec
        self._waiting.pop(proc.pid).set()
        while len(self.ended) > MAX_ENDED:
            del self.ended[next(iter(self.ended))]
        log.info("child process %s (home %s) ended: %s", proc.pid, home, launch.describe({"exit": rec}))
        try:
            launch.write_exit(home, rec)
        except OSError as exc:  # the home was deleted meanwhile (a spawn undone, remove --delete-home)
            log.debug("exit of child %s not written in %s: %s", proc.pid, home, exc.strerror)
