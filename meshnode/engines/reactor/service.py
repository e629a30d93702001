"""The reactor's driver (protocols/reactor.md section 12): the I/O around the pure core.

One scan reads the node's signals (the built-in adapters in one ``store.read``, the plug-ins that
are due, the hour-scale liveness tracker's changes), feeds them with what finished since the last
scan (runs ended, traces found, leases refused) to ``Reactor.step``, persists the step in one
transaction, then does what it asks: leases and starts wake jobs (the local core through the
cycle's wake slot, external agents through their command, each in a child task), sends
escalations, and looks for the traces of jobs whose run has ended. Inside ``meshnode run`` it
scans every ``scan_seconds`` and early (debounced) when poked; ``meshnode reactor scan --once``
drives the same class without a cycle or a mesh.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import socket
import time
from pathlib import Path
from typing import Awaitable, Callable

import trio

from meshnode.base.container import now_ms
from meshnode.base.errors import MeshnodeError
from meshnode.net.liveness import LivenessTracker, Thresholds
from meshnode.engines.reactor import adapters, escalate, handled, persist, plugins, traces, wake_context
from meshnode.engines.reactor.aliases import AliasError, AliasRegistry
from meshnode.engines.reactor.context_reads import context_reads
from meshnode.engines.reactor.core import Reactor
from meshnode.engines.reactor.report import parse_report
from meshnode.base.config.reactor import ReactorConfig
from meshnode.engines.reactor.types import (
    AgentsOff, Escalation, Event, LeaseRefused, RunEnded, Settled, Severity, TraceKind, TracesFound,
)
from meshnode.records.reactor import audit, cooldowns, leases, scans
from meshnode.records import family
from meshnode.records.mind import registry

log = logging.getLogger("meshnode.engines.reactor")

PLUGIN_FAILURES = 3  # failed runs in a row that make an adapter.failed event (design 4.1)
POKE_DEBOUNCE_S = 5.0  # a burst of notes makes one early scan, not one each
TRACKED_REFRESH_MS = 600_000  # who the hour-scale liveness follows is listed again every 10 minutes
LEASE_SLACK_MS = 60_000  # a lease outlives its run's budget by this much (design 7.2)
HOUR_MS = 3_600_000


def reactor_config(values: dict, self_did: str) -> ReactorConfig:
    """``[reactor]`` as the core's settings, for this node: ``self`` is its DID, and the agents it can
    wake are its own core and the external agents configured."""
    return ReactorConfig.from_mapping(values, self_id=self_did)


def machine_boot_ms() -> int:
    """When this host booted (ms): a lease held under another boot of this host is dead."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            for line in f:
                if line.startswith("btime "):
                    return int(line.split()[1]) * 1000
    except OSError:
        pass
    return int((time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)) // 1 * 1000)


def holder_id() -> str:
    """Who holds a lease: ``<pid>@<hostname>:<boot ms>`` (design 7.2)."""
    return f"{os.getpid()}@{socket.gethostname()}:{machine_boot_ms()}"


def with_children(cfg: ReactorConfig, children, self_did: str) -> ReactorConfig:
    """``cfg`` naming this node the mentor of each child ``[reactor.mentors]`` gives no other
    (spawn contract, decision 4); in the map, a child is followed (``tracked_dids``)."""
    mentors = {**{did: self_did for did in children}, **cfg.mentors}
    return cfg if mentors == dict(cfg.mentors) else dataclasses.replace(cfg, mentors=mentors)


def tracked_dids(cfg: ReactorConfig, committee: list[str], coworkers: list[str], self_did: str) -> set[str]:
    """The DIDs whose hour-scale liveness the reactor follows (design 3.3): mentees and mentors of
    the mentor map (children too: ``with_children``), the committee, the coworkers; never itself."""
    dids = {d for pair in cfg.mentors.items() for d in pair if d.startswith("did:")}
    return (dids | set(committee) | set(coworkers)) - {self_did}


class ReactorService:
    def __init__(self, store, key, cfg: ReactorConfig, home: Path, metrics, *, cycle=None, mesh=None,
                 clock: Callable[[], int] = now_ms, committee: list[str] | None = None,
                 relay: Callable[[str, str], Awaitable[object]] | None = None):
        self.store, self.key, self.cfg, self.home, self.metrics = store, key, cfg, Path(home), metrics
        self.configured, self._children = cfg, frozenset()  # [reactor] as written; cfg adds the children
        self.cycle, self.mesh, self.clock = cycle, mesh, clock
        self.did = key.did
        self.committee = list(committee or [])
        self.relay = relay  # scan --once: escalation notes pushed by the running node, when there is one
        self.holder = holder_id()
        self.aliases_path = self.home / "reactor" / "aliases.toml"
        self.wake_dir = self.home / "reactor" / "wake"
        self.reactor: Reactor | None = None
        self.liveness = LivenessTracker(Thresholds(int(cfg.quiet_hours * HOUR_MS), int(cfg.stale_hours * HOUR_MS),
                                                   int(cfg.dead_hours * HOUR_MS)))
        self._fed: dict[str, int] = {}  # DID -> last heard time given to the hour-scale tracker
        self._tracked: set[str] = set()
        self._tracked_at = 0  # when the tracked DIDs were last listed (ms)
        self._aliases_mtime: float | None = None
        self._inputs: list = []  # RunEnded / TracesFound / LeaseRefused for the next step
        self._running: dict[str, str] = {}  # job id -> agent, runs this process started and waits on
        self._started: set[str] = set()  # every job this process started (a queued row is not started twice)
        self._aliases: AliasRegistry | None = None
        self._plugin_due: dict[str, int] = {}  # plug-in name -> next run (ms)
        self._plugin_failures: dict[str, tuple[int, int]] = {}  # name -> (first failure ms, failures in a row)
        self.plugin_runs: dict[str, dict] = {}  # name -> its last run, for status
        self.adapter_errors: list[str] = []
        self.waiting: list[str] = []  # jobs of this node's core a scan without the cycle left queued
        self._ticked = False  # a regular tick of the cycle ended since the last scan (it may have handled events)
        self._poked = trio.Event()
        self._scan_lock = trio.Lock()
        self._nursery: trio.Nursery | None = None
        self.last: dict = {}
        self.next_scan_ms: int | None = None
        self.core_off: bool | None = None  # no LLM configured at the last scan (None: not looked yet)

    # --- running in the node -------------------------------------------------------------

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """Scan every ``scan_seconds`` and early when poked, until cancelled; runs in its own nursery."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await self._interrupted()
            task_status.started(self)
            while True:
                started = trio.current_time()
                await self._scan_logged()
                # leases that expired since (a process of this boot killed mid-run) free their jobs
                await self._interrupted()
                took = trio.current_time() - started
                if took > self.cfg.scan_seconds:
                    log.warning("reactor: a scan took %.1f s, longer than scan_seconds (%g); the next starts now",
                                took, self.cfg.scan_seconds)
                    continue
                self.next_scan_ms = self.clock() + int((self.cfg.scan_seconds - took) * 1000)
                with trio.move_on_after(self.cfg.scan_seconds - took):
                    await self._poked.wait()
                    await trio.sleep(min(POKE_DEBOUNCE_S, self.cfg.scan_seconds / 2))  # gather the burst
                self._poked = trio.Event()

    async def _interrupted(self) -> None:
        """Jobs a stopped process left leased or running (design 7.2): the core hears they ended.
        At start, and after each scan for leases that expired meanwhile (a process of this boot
        killed mid-run holds its lease until it expires)."""
        now = self.clock()
        try:
            interrupted = await self.store.write(leases.interrupted_jobs, now, self.holder, frozenset(self._running))
        except MeshnodeError as exc:  # the database busy: the next scan looks again
            log.warning("reactor: interrupted jobs not looked for: %s", exc.reason)
            return
        if interrupted:
            log.warning("reactor: %d job(s) were interrupted by the last stop: %s", len(interrupted),
                        ", ".join(interrupted))
            self.metrics.inc("reactor_jobs_total", len(interrupted), agent="*", status="interrupted")
        self._inputs.extend(RunEnded(job_id, now, "interrupted") for job_id in interrupted)

    def poke(self) -> None:
        """Scan soon: a note or a task arrived, or a run ended (its check is due)."""
        self._poked.set()

    def tick_ended(self, summary: dict) -> None:
        """A tick of the cycle ended (``TickEvents``): it may have handled what waits for this node's
        core (answered the message): the next scan looks, and settles it (design 6.3)."""
        self._ticked = True
        self.poke()

    async def _settled(self, reactor: Reactor, now: int) -> list[Settled]:
        """After the cycle's ticks: the events pending for this node's core (or in a job not started
        yet) that a tick handled. A started job's events are its run's to handle (its trace check)."""
        if not self._ticked:
            return []
        self._ticked = False
        running = {k for j in reactor.open_jobs() if j.job_id in self._started for k in j.events}
        pending = [e for e in reactor.pending_of(self.did, handled.MAX_EVENTS) if e.dedupe_key not in running]
        keys = await self.store.read(handled.handled_keys, self.did, pending, now, self_did=self.did,
                                     phrases=tuple(self.cfg.status_only_phrases))
        if keys:
            self.metrics.inc("reactor_settled_total", len(keys), by="tick")
        return [Settled(tuple(sorted(keys)), now, "tick")] if keys else []

    async def _still_pending(self, job) -> bool:
        """Before a wake calls the LLM: whether any of its events still waits (not handled since its
        signal). The handled ones are settled with the next step whatever the answer."""
        reactor = self.reactor
        events = [e for k in job.events if reactor is not None and (e := reactor.event(k)) is not None]
        done = await self.store.read(handled.handled_keys, job.agent, events, self.clock(), self_did=self.did,
                                     phrases=tuple(self.cfg.status_only_phrases))
        if done and len(done) < len(job.events):
            self._inputs.append(Settled(tuple(sorted(done)), self.clock(), "tick"))
        if done:
            self.metrics.inc("reactor_settled_total", len(done), by="recheck")
        return len(done) < len(job.events)

    async def lift_cooldowns(self, keys: list[str] | None) -> list[str]:
        """Lift cooldowns by hand: ``keys``, or (None) every one in force; in the running core at
        once and in the rows now. The keys lifted."""
        async with self._scan_lock:  # never in the middle of a step
            now = self.clock()
            if keys is None:
                held = self.reactor.cooldowns(now) if self.reactor is not None else {}
                keys = sorted({r["key"] for r in await self.store.read(cooldowns.in_force, now)} | set(held))
                if not keys:
                    return []
            cooldowns.check_keys(keys)
            lifted = set(self.reactor.lift(keys)) if self.reactor is not None else set()
            lifted |= set(await self.store.write(cooldowns.lift, keys))
            return sorted(lifted)

    def heard(self, did: str, at_ms: int) -> None:
        """A sign of life from ``did`` (the same calls the node's own tracker gets)."""
        if did in self._tracked and at_ms > self._fed.get(did, 0):
            self._fed[did] = at_ms
            self.liveness.heard(did, at_ms)

    async def _scan_logged(self) -> None:
        try:
            await self.scan()
        except (MeshnodeError, AliasError) as exc:
            reason = getattr(exc, "reason", str(exc))
            log.warning("reactor scan failed: %s", reason)
            self.metrics.inc("reactor_scan_errors", reason=getattr(exc, "code", "alias_error"))
        except Exception:  # a bug must not stop the node: log it, count it, try again next scan
            log.exception("reactor scan failed")
            self.metrics.inc("reactor_scan_errors", reason="internal")

    # --- one scan ------------------------------------------------------------------------

    async def scan(self, *, dry_run: bool = False) -> dict:
        """One scan (see the module's docstring); with ``dry_run`` the decisions only, nothing written
        or started. Returns a summary: decisions, jobs, escalations, checks."""
        async with self._scan_lock:
            t0 = time.monotonic()
            now = self.clock()
            await self._follow_children()
            if dry_run:
                self._aliases = self._load_aliases(force=True)
                reactor = Reactor(self.cfg, self._aliases, await self.store.read(persist.load_state, now, self.cfg))
            else:
                reactor = await self._reactor(now)
            stored, heard = await self._signals(now)
            if not dry_run:
                self._inputs += await self._settled(reactor, now)
            events = [*stored, *heard]
            off = await self._agents_off()
            if dry_run:
                summary = _summary(reactor.step(now, [off, *self._inputs, *events]), len(events))
                summary["dry_run"] = True
                self._inputs.extend(heard)  # heard once (liveness changes, plug-in lines): the next scan's
                return summary
            try:
                return await self._step(reactor, off, stored, heard, now, t0)
            except BaseException:  # the core may be ahead of the rows: the next scan reloads it from them
                self.reactor = None
                raise

    async def _step(self, reactor: Reactor, off: AgentsOff, stored: list, heard: list, now: int, t0: float) -> dict:
        """The step of one scan, written, then carried out. Until the step is written, what cannot be
        read again (run ends, traces, liveness changes, plug-in lines) is kept for the next scan;
        the adapters' events are read again from the store."""
        events = [*stored, *heard]
        kept, self._inputs = [*self._inputs, *heard], []
        try:
            step = reactor.step(now, [off, *kept, *stored])
            summary = _summary(step, len(events))
            await self._contexts(step, reactor, now)
            await self.store.write(persist.save_step, step, now)
        except BaseException:
            self._inputs[:0] = kept
            raise
        self._count(step, events)
        summary["started"] = await self._start_jobs(reactor, step, now)
        if self.waiting:
            summary["waiting_for_node"] = list(self.waiting)
        summary["escalations_sent"] = await self._escalate(now)
        summary["checks"] = await self._check(step, now)
        took = int((time.monotonic() - t0) * 1000)
        self.last = {"at_ms": now, "took_ms": took, "events": len(events),
                     "jobs": [j.job_id for j in step.jobs], "holder": self.holder}
        await self.store.write(scans.mark_scan, now, self.last)
        self.metrics.inc("reactor_scans_total")
        self.metrics.set("reactor_scan_ms", took)
        summary["took_ms"] = took
        return summary

    async def _agents_off(self) -> AgentsOff:
        """This node's core is off while no main LLM is registered (core-outage mode with nothing
        to try): its signals go to the person, one inbox line each, instead of waking it to fail
        (``agent_off.py``). Read each scan: an LLM added later is used from the next scan on. An
        LLM registered but failing is not "off": its wakes fail and escalate as they always did."""
        off = not await self.store.read(registry.mains)
        if off != self.core_off:
            self.core_off = off
            if off:
                log.info("reactor: no LLM is configured: signals for the agent go to the person's inbox,"
                         " one line each (add one with `meshnode llm add`)")
            else:
                log.info("reactor: an LLM is configured: signals wake the agent again")
        return AgentsOff(frozenset({self.did}) if off else frozenset())

    async def _reactor(self, now: int) -> Reactor:
        """The core with its state, loaded from the tables at the first scan; re-given the alias
        registry when its file changed."""
        if self.reactor is None:
            state = await self.store.read(persist.load_state, now, self.cfg)
            self._aliases = self._load_aliases(force=True)
            self.reactor = Reactor(self.cfg, self._aliases, state)  # checking jobs: their checks are scheduled
        else:
            aliases = self._load_aliases()
            if aliases is not None:
                self._aliases = aliases
                self.reactor.set_aliases(aliases)
        return self.reactor

    def _load_aliases(self, force: bool = False) -> AliasRegistry | None:
        """The registry when it is to be (re)read: at load, or when the file's mtime changed. A bad
        file keeps the old registry (the error is logged and counted)."""
        try:
            mtime = self.aliases_path.stat().st_mtime
        except OSError:
            mtime = None
        if not force and mtime == self._aliases_mtime:
            return None
        try:
            registry = AliasRegistry.load(self.aliases_path, self_id=self.did)
        except AliasError as exc:
            self.metrics.inc("reactor_alias_errors")
            if force:  # the caller says it (the scan's log line, the CLI's one error line)
                raise
            log.warning("reactor aliases not loaded (the old registry is kept): %s", getattr(exc, "reason", exc))
            return None
        self._aliases_mtime = mtime
        return registry

    async def _signals(self, now: int) -> tuple[list, list]:
        """Events of this scan: (the built-in adapters' (read again next scan if this one is not
        written), what is heard once: the hour-scale liveness changes and the due plug-ins' lines)."""
        live = await self._mesh_liveness()
        errors: list[str] = []
        # a chat message to this node makes its cycle tick: that tick gets the first go at it
        grace = self.cfg.person_grace_ms if self.cycle is not None else 0
        events = list(await self.store.read(adapters.scan, now, self.cfg, self_did=self.did, liveness=live,
                                            aliases=self._aliases, errors=errors, chat_grace_ms=grace))
        for error in errors:  # one adapter's failed read does not stop the others
            log.warning("reactor adapter failed: %s", error)
            self.metrics.inc("reactor_adapter_errors", adapter=error.split(":", 1)[0])
        self.adapter_errors = errors
        heard = adapters.liveness_events(await self._liveness_changes(now), now, self.cfg,
                                         last_heard=self.liveness.last_heard_ms)
        heard += await self._plugins(now)
        return events, heard

    async def _mesh_liveness(self) -> dict[str, str]:
        gmp = getattr(self.mesh, "gmp", None)
        if gmp is not None:
            return await gmp.liveness()
        from meshnode.net import mesh_gmp_queries as q
        return {d: s for d, (s, _) in (await self.store.read(q.liveness_since)).items()}

    async def _follow_children(self) -> None:
        """The active children, read each scan: a spawn or a removal is followed from the next one."""
        children = frozenset(await self.store.read(family.active_children))
        if children != self._children:  # the mentor map changes, and the tracked DIDs are listed again
            self._children, self.cfg, self._tracked_at = children, with_children(self.configured, children,
                                                                                 self.did), 0
            if self.reactor is not None:
                self.reactor.cfg = self.cfg

    async def _seed_liveness(self) -> None:
        """Who to follow, and at start each one's last heard time from the peers table, so a restart
        does not reset a silence; one no longer followed (a removed child) is forgotten."""
        from meshnode.net import mesh_gmp_queries as q
        coworkers = await self.store.read(q.coworkers, self.did)
        tracked = tracked_dids(self.cfg, self.committee, coworkers, self.did)
        for did in self._tracked - tracked:
            self.liveness.forget(did)
            self._fed.pop(did, None)
        self._tracked = tracked
        stored = await self.store.read(_last_heard)
        for did in sorted(self._tracked):
            if stored.get(did) and did not in self._fed:  # those followed already keep what was heard
                self.heard(did, stored[did])

    async def _liveness_changes(self, now: int) -> list:
        if now - self._tracked_at >= TRACKED_REFRESH_MS:  # new mentees, coworkers since the last look
            self._tracked_at = now
            await self._seed_liveness()
        node_tracker = getattr(self.mesh, "liveness", None)
        if node_tracker is not None:  # what the node's tracker heard since the last scan
            for did in self._tracked:
                heard = node_tracker.last_heard_ms(did)
                if heard:
                    self.heard(did, heard)
        return [c for c in self.liveness.tick(now) if c.old is not None]

    async def _plugins(self, now: int) -> list:
        """Run the plug-ins whose interval has come, side by side (a scan waits for the slowest, not
        for the sum of their timeouts); three failed runs in a row are an event."""
        due = [(name, spec) for name, spec in sorted(self.cfg.adapters.items())
               if self._plugin_due.get(name, 0) <= now]
        runs: dict[str, plugins.PluginRun] = {}

        async def run_one(name: str, spec: dict) -> None:
            runs[name] = await plugins.run_plugin(name, spec, self.home, now)

        async with trio.open_nursery() as nursery:
            for name, spec in due:
                self._plugin_due[name] = now + int(float(spec.get("every_seconds", 900)) * 1000)
                nursery.start_soon(run_one, name, spec)
        events = []
        for name, _spec in due:
            run = runs[name]
            events += list(run.events)
            for result, n in (("valid", run.valid), ("invalid", run.invalid), ("dropped", run.dropped)):
                if n:
                    self.metrics.inc("reactor_adapter_lines_total", n, adapter=name, result=result)
            self.plugin_runs[name] = {"at_ms": now, "exit": run.exit, "valid": run.valid, "invalid": run.invalid,
                                      "first_error": run.first_error, "stderr": run.stderr[-500:]}
            if not run.failed:
                self._plugin_failures.pop(name, None)
                continue
            first, count = self._plugin_failures.get(name, (now, 0))
            self._plugin_failures[name] = (first, count + 1)
            if count + 1 >= PLUGIN_FAILURES:  # the person hears of it (rule person); the key is the episode
                events.append(_adapter_failed(name, first, now, run, self.did))
        return events

    # --- what a step asks for ------------------------------------------------------------

    async def _contexts(self, step, reactor: Reactor, now: int) -> None:
        """Give each new wake job its full wake context (design 8) before the step is written: the
        core's context plus what only the store knows (display names of the peers in it, this node's
        due tasks) and the hour-scale liveness of the peers followed; then write it to
        ``<home>/reactor/wake/<job_id>.md`` (what the agent reads) and ``.json``."""
        wakes = [job for job in step.jobs if job.kind == "wake"]
        if not wakes:
            return
        live = [{"did": d, "state": s.value} for d, s in sorted(self.liveness.peers().items()) if s.value != "ok"]
        for job in wakes:
            events = [e for k in job.events if (e := reactor.event(k)) is not None]
            dids = {str(v) for e in events for k, v in e.refs.items() if k in ("author", "from", "did")}
            dids |= {x["did"] for x in live[:wake_context.SECTION_ITEMS]}
            extras = await self.store.read(context_reads, sorted(dids), job.agent == self.did, self.did, now)
            liveness = [{**x, "name": extras["names"].get(x["did"])} for x in live]
            job.context = wake_context.build(job, events, {**extras, "liveness": liveness}, self.cfg)
            await self._write_context(job)

    async def _start_jobs(self, reactor: Reactor, step, now: int) -> list[str]:
        """Lease and start the step's jobs, and queued ones found in the state (left by a crash or
        written by ``scan --once`` for this node's core)."""
        started, self.waiting = [], []
        queued = [j for j in reactor.open_jobs() if j.status == "queued"]
        for job in _unique([*step.jobs, *queued]):
            if job.job_id in self._started or job.kind != "wake":  # a watch job runs nobody
                continue
            if job.agent == self.did and self.cycle is None:
                self.waiting.append(job.job_id)  # scan --once without a node: `meshnode run` starts it
                continue
            if job.agent != self.did and job.agent not in self.cfg.external:
                continue  # not ours to wake (the core routes only local agents; defensive)
            if job.agent in self._running.values():
                continue  # a run of this agent by this process (a P1 during a wake): it waits, queued, its turn
            at = self.clock()  # not the scan's start: plug-ins may have run long since
            expires = at + int(job.max_runtime_s) * 1000 + LEASE_SLACK_MS
            if not await self.store.write(leases.take_lease, job.agent, job.job_id, self.holder, at, expires):
                self._inputs.append(LeaseRefused(job.job_id, holder="another process"))
                self.metrics.inc("reactor_held_total", limit="lease")
                continue
            md_path = self.wake_dir / f"{job.job_id}.md"
            if not md_path.exists():
                md_path = await self._write_context(job)
            await self.store.write(leases.set_job_status, job.job_id, "running", self.clock())
            self._started.add(job.job_id)
            self._running[job.job_id] = job.agent
            self.metrics.inc("reactor_jobs_total", agent=_agent_label(job.agent, self.did), status="started")
            self.metrics.set("reactor_signal_to_wake_ms", max(0, now - _first_signal(reactor, job)))
            self._spawn(self._run_job, job, md_path)
            started.append(job.job_id)
        return started

    def _spawn(self, fn, *args) -> None:
        if self._nursery is None:
            raise RuntimeError("ReactorService: no nursery to run jobs in (use run() or scan_once())")
        self._nursery.start_soon(fn, *args)

    async def _write_context(self, job) -> Path:
        """``<home>/reactor/wake/<job_id>.md`` (what the agent reads) and ``.json``."""
        md = wake_context.render_md(job.context, self.cfg.context_bytes)

        def write() -> Path:
            self.wake_dir.mkdir(parents=True, exist_ok=True)
            (self.wake_dir / f"{job.job_id}.json").write_text(json.dumps(job.context, indent=2, default=str),
                                                              encoding="utf-8")
            path = self.wake_dir / f"{job.job_id}.md"
            path.write_text(md, encoding="utf-8")
            return path

        return await trio.to_thread.run_sync(write)

    async def _run_job(self, job, md_path: Path) -> None:
        """One bounded run; its end (and report, checked against the store) is fed to the next step."""
        exit_, report = "error", None
        try:
            if job.agent == self.did:
                md = md_path.read_text(encoding="utf-8")
                exit_, report = await self.cycle.wakes.run(job.job_id, md, max_ticks=int(self.cfg.max_ticks),
                                                           max_runtime_s=float(job.max_runtime_s),
                                                           still_pending=lambda: self._still_pending(job))
            elif not await self._still_pending(job):
                exit_ = "settled"
            else:
                from meshnode.engines.reactor.external import wake_external
                exit_, report = await wake_external(job.agent, self.cfg.external[job.agent], md_path, self.home,
                                                    job.job_id)
        except trio.Cancelled:  # the node stops mid-run: the next start finds it interrupted (design 7.2)
            with trio.CancelScope(shield=True):
                await self._guarded("release", self.store.write(leases.release_lease, job.job_id))
            raise
        except MeshnodeError as exc:
            log.warning("reactor: job %s failed to run: %s", job.job_id, exc.reason)
        except Exception:
            log.exception("reactor: job %s failed to run", job.job_id)
        with trio.CancelScope(shield=True):
            await self._ended(job, exit_ or "error", report)

    async def _ended(self, job, exit_: str, report: dict | None) -> None:
        """The run's end: its row and lease (a database error there is logged and counted, never
        raised: this runs in the service's nursery, and the core must hear of the end anyway)."""
        now = self.clock()
        final = parse_report(report, now_ms=now) if report else None
        mismatches: tuple[str, ...] = ()
        if final is not None:
            mismatches = tuple(await self._guarded("check_report", self.store.read(
                traces.check_report, final, job.created_ms, self_did=self.did, agent=job.agent)) or ())
        await self._guarded("status", self.store.write(leases.set_job_status, job.job_id, "checking", now,
                                                       exit=exit_, report=report))
        await self._guarded("release", self.store.write(leases.release_lease, job.job_id))
        self._running.pop(job.job_id, None)
        self._inputs.append(RunEnded(job.job_id, now, exit_, final, mismatches))
        self.metrics.inc("reactor_jobs_total", agent=_agent_label(job.agent, self.did), status=f"ran_{exit_}")
        self.poke()  # the check is due trace_grace_seconds from now: do not wait a whole scan for it

    async def _guarded(self, stage: str, work: Awaitable):
        """``await work``; a MeshnodeError (the database busy or failing) is logged and counted in
        ``reactor_run_errors{stage}`` and gives None."""
        try:
            return await work
        except MeshnodeError as exc:
            log.warning("reactor: after a run, %s not written: %s", stage, exc.reason)
            self.metrics.inc("reactor_run_errors", stage=stage)
            return None

    async def _escalate(self, now: int) -> list[str]:
        """Send the escalations the step wrote, and any a stop left unsent (written, never sent):
        the rows are the truth, so a restart neither loses nor repeats one."""
        rows = await self.store.read(persist.unsent_escalations)
        pending = [Escalation(key=row["key"], agent=row["agent"], to_id=row["to_id"], level=int(row["level"]),
                              event_key=row["event_key"], event_type=row["event_type"], subject=row["subject"],
                              text=row["text"], job_id=row["job_id"], at_ms=int(row["sent_ms"])) for row in rows]
        sent = []
        for batch in escalate.batches(pending):  # one note per recipient and level, a dedupe line per key
            try:
                cid = await escalate.send(self.store, self.key, batch, now, mesh=self.mesh, relay=self.relay,
                                          metrics=self.metrics)
            except MeshnodeError as exc:  # e.g. a mentor named by no DID: the others, and the checks, go on
                log.warning("reactor: escalation note to %s not written: %s (kept; tried again next scan)",
                            batch[0].to_id[:80], exc.reason)
                self.metrics.inc("reactor_escalations_unsent", reason=exc.code)
                continue
            for esc in batch:
                await self.store.write(persist.record_escalation, esc.key, cid)
                self.metrics.inc("reactor_escalations_total", level=str(esc.level))
                sent.append(esc.key)
        return sent

    async def _check(self, step, now: int) -> list[str]:
        """Look for the traces the step asks about; what is found (or not) closes the jobs next step."""
        checked = []
        for check in step.checks:
            found = tuple(await self.store.read(traces.find, check, now, self_did=self.did,
                                                phrases=tuple(self.cfg.status_only_phrases)))
            for t in found:
                self.metrics.inc("reactor_traces_total", kind=t.kind.value)
            self._inputs.append(TracesFound(check.job_id, now, found))
            checked.append(check.job_id)
        if checked:
            self.poke()
        return checked

    def _count(self, step, events: list) -> None:
        types = {e.dedupe_key: e.event_type for e in events if hasattr(e, "dedupe_key")}
        for d in step.decisions:
            if d.action in ("accepted", "duplicate", "noise", "unknown_agent"):
                self.metrics.inc("reactor_events_total", type=types.get(d.dedupe_key, "?"), result=d.action)
            elif d.action.startswith("held_"):
                self.metrics.inc("reactor_held_total", limit=d.action.removeprefix("held_"))
        for job in step.changed.jobs:
            if job.status in ("ok", "failed", "skipped", "interrupted"):
                self.metrics.inc("reactor_jobs_total", agent=_agent_label(job.agent, self.did), status=job.status)

    # --- scan --once ----------------------------------------------------------------------

    async def scan_once(self, *, dry_run: bool = False) -> dict:
        """One scan in this process (``meshnode reactor scan --once``): external agents it wakes are
        waited for (up to their timeout) and their end written, so the next scan, here or in the
        node, checks their traces; this node's core is left to the running node (poked)."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            summary = await self.scan(dry_run=dry_run)
        self._nursery = None
        if self._inputs and not dry_run:  # runs that ended: tell the core now, so their checks are scheduled
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                summary["after_runs"] = await self.scan()
            self._nursery = None
        return summary

    async def status(self) -> dict:
        """What ``reactor status`` shows, as the running node sees it."""
        stored = await self.store.read(audit.status, self.clock())
        return {**stored, "enabled": True, "node": "running", "core": "running" if self.cycle else "off",
                "agent_off": bool(self.core_off),  # no LLM configured: signals go to the person's inbox
                "last_scan": self.last or stored.get("last_scan"), "next_scan_ms": self.next_scan_ms,
                "running_jobs": sorted(self._running), "holder": self.holder,
                "liveness_tracked": len(self._tracked), "adapters": dict(self.plugin_runs),
                "adapter_errors": list(self.adapter_errors)}


def _adapter_failed(name: str, first_ms: int, now: int, run, self_did: str) -> Event:
    why = run.first_error or run.stderr[-200:] or run.exit
    return Event(event_type="adapter.failed", subject=name, agent=self_did, severity=Severity.P3,
                 dedupe_key=f"adapter_failed:{name}:{first_ms}", suggested_route="operator",
                 required_trace=(TraceKind.NONE,), at_ms=now, source="reactor",
                 summary=f"the plug-in adapter {name} failed {PLUGIN_FAILURES} runs in a row: {why}"[:200],
                 refs={"adapter": name})


def _summary(step, n_events: int) -> dict:
    return {"events": n_events, "decisions": [_plain(d) for d in step.decisions],
            "jobs": [{"job_id": j.job_id, "agent": j.agent, "priority": int(j.priority), "events": list(j.events),
                      "reason": list(j.reason)} for j in step.jobs],
            "escalations": [{"key": e.key, "to": e.to_id, "level": e.level} for e in step.escalations]}


def _plain(obj) -> dict:
    return json.loads(json.dumps(dataclasses.asdict(obj), default=str))


def _unique(jobs: list) -> list:
    seen, out = set(), []
    for j in jobs:
        if j.job_id not in seen:
            seen.add(j.job_id)
            out.append(j)
    return out


def _agent_label(agent: str, self_did: str) -> str:
    return "self" if agent == self_did else agent[:40]


def _first_signal(reactor: Reactor, job) -> int:
    times = [e.at_ms for k in job.events if (e := reactor.event(k)) is not None]
    return min(times) if times else job.created_ms


def _last_heard(db) -> dict[str, int]:
    return {d: int(t) for d, t in db.conn.execute("SELECT did, last_heard_ms FROM peer_liveness"
                                                  " WHERE last_heard_ms IS NOT NULL")}
