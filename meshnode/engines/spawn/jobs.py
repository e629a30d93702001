"""Spawns run by the node (its control command ``spawn``) as jobs: the control channel gives one
request 90 s, and a clone of a large store takes longer. A job runs spawn_child on a worker
thread in a trio system task (it must outlive the request that started it, and is never
abandoned: it finishes or undoes itself); the request waits for it a while and otherwise answers
``{"pending": id}``, and ``spawn_wait`` asks again. Callers inside the node (the gate's spawn
tool) wait until it is done.
"""

from __future__ import annotations

import logging
import secrets
from typing import Callable

import trio

from meshnode.base.errors import MeshnodeError, SpawnError

log = logging.getLogger("meshnode.engines.spawn")
ANSWER_SECONDS = 60.0  # how long one control request waits for a job (well inside the channel's 90 s)
MAX_JOBS = 8  # finished jobs nobody asked for again are forgotten beyond this


class _Job:
    def __init__(self):
        self.done = trio.Event()
        self.result: dict | None = None
        self.error: MeshnodeError | None = None


class SpawnJobs:
    def __init__(self):
        from meshnode.engines.spawn.processes import ChildProcesses

        self._jobs: dict[str, _Job] = {}
        self.processes = ChildProcesses()  # the children this node starts, waited on (no zombie)

    async def spawn(self, node, ask: dict, answer_seconds: float | None) -> dict:
        """The control command ``spawn`` of ``node`` (its config, key, store, mesh, metrics): the
        arguments checked, then ``spawn_child`` with a LiveParent as a job."""
        from meshnode.engines.spawn.model import SpawnRequest
        from meshnode.engines.spawn.parent import LiveParent
        from meshnode.engines.spawn.service import spawn_child

        texts = ("kind", "name", "home", "autostart", "bundle", "by", "friends")
        if not all(isinstance(ask[k], (str, type(None))) for k in texts) \
                or not all(isinstance(v, (int, float, type(None))) for v in (ask["expires_hours"], answer_seconds)):
            raise MeshnodeError("bad_request", "spawn: kind, name, home, autostart, bundle, by and friends are strings;"
                                " expires_hours and answer_seconds numbers")
        req = SpawnRequest.from_ask(ask)
        parent = LiveParent(node.config, node.key, node.store, node.mesh, self.processes)

        def work() -> dict:
            try:
                result = spawn_child(node.config, node.key, req, parent)
            except SpawnError as exc:
                node.metrics.inc("spawn_refused", code=exc.code, by=req.by)
                raise
            node.metrics.inc("spawned", kind=req.kind, by=req.by)
            return result.to_dict()

        return await self.run(work, None if answer_seconds is None else min(float(answer_seconds), 80.0))

    async def run(self, work: Callable[[], dict], wait_seconds: float | None = ANSWER_SECONDS) -> dict:
        """Start ``work`` (blocking: it runs on a worker thread) and answer as ``wait``."""
        job_id, job = secrets.token_hex(8), _Job()
        self._forget_finished()
        self._jobs[job_id] = job
        trio.lowlevel.spawn_system_task(self._work, job, work, name=f"spawn {job_id}")
        return await self.wait(job_id, wait_seconds)

    async def wait(self, job_id: str, wait_seconds: float | None = ANSWER_SECONDS) -> dict:
        """The job's result (its error raised), or ``{"pending": id}`` when it is still running after
        ``wait_seconds`` (None: wait until it is done, for callers inside the node)."""
        job = self._jobs.get(job_id)
        if job is None:
            raise MeshnodeError("not_found", f"no spawn job {job_id[:20]!r} (finished and told, or never started)")
        with trio.move_on_after(float("inf") if wait_seconds is None else wait_seconds):
            await job.done.wait()
        if not job.done.is_set():
            return {"pending": job_id}
        del self._jobs[job_id]
        if job.error is not None:
            raise job.error
        return job.result

    async def start_child(self, home: str, autostart: str) -> dict:
        """``launch.launch`` by the running node: a direct start is this node's own process, waited
        on (``processes``), so its end is reaped and recorded (a CLI that started it and exited left
        it to init, and a sandbox's init may never reap: a zombie)."""
        from pathlib import Path

        from meshnode.engines.spawn import launch

        return await trio.to_thread.run_sync(
            lambda: launch.launch(Path(home), autostart, direct=lambda h: trio.from_thread.run(self.processes.open, h)))

    async def stop_child(self, home: str, autostart: str) -> bool:
        """``launch.stop`` by the running node; a child it started is reaped by its waiter."""
        from pathlib import Path

        from meshnode.engines.spawn import launch

        return await trio.to_thread.run_sync(launch.stop, Path(home), autostart)

    @staticmethod
    async def _work(job: _Job, work: Callable[[], dict]) -> None:
        try:
            job.result = await trio.to_thread.run_sync(work)
        except MeshnodeError as exc:
            job.error = exc
        except Exception as exc:  # a bug must not take the node down (a system task's error would)
            log.exception("spawn failed")
            job.error = MeshnodeError("internal_error", f"spawn failed inside the node: {type(exc).__name__}")
        finally:
            job.done.set()

    def _forget_finished(self) -> None:
        finished = [k for k, j in self._jobs.items() if j.done.is_set()]
        for k in finished[:max(0, len(finished) - MAX_JOBS + 1)]:
            del self._jobs[k]
