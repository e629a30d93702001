"""The REPL cycle (seed 000): one tick after another, as the node's cognition module.

A tick: build the contexts -> ask the main LLM (falling back by priority) ->
extract commands -> anti-stagnation reflex (local novelty against the last
responses; a repetition is not stored again, a short reflex record is, and
its commands are not run twice) -> validation (``validation``: validator
LLMs rate it, each vote weighted by its adapted trust; ``auto_pass`` while
none is registered or all are set aside for failing) -> write
``llm_recent_responses`` -> run the commands against the store when the
rating reaches +1, else keep them in ``held`` for a person to release or
drop -> log the tick in ``process_log``.

Modes: ``starting`` until the first tick has asked an LLM; ``normal``;
``isolated`` without peers (decisions that needed the mesh are kept privately
to revisit, ``isolation``); ``core_outage`` when no LLM is registered or none
answers (the loop keeps a reduced tick: it logs and waits, and ``meshnode
status`` says so, with each registered LLM's last error, or how to add one).
The prompt's context 7 names the mode the tick runs in if the LLM answers.
Between ticks the cycle pauses ``[cognition] pause_seconds``.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

import trio

from meshnode.app.actions import gmp as gmp_actions
from meshnode.app.context import App
from meshnode.engines.cognition import (assessment, auxiliary, contexts, error_levels, executor, gate_commands, isolation,
                                mcp_commands, mesh_commands, processes, sending, stagnation, wake_report)
from meshnode.records.mind import held, registry, tick_traces
from meshnode.engines.cognition.handlers import goals, mind
from meshnode.engines.cognition.commands import Command
from meshnode.engines.cognition.live_answer import LiveAnswer
from meshnode.engines.cognition.llm import LLMError, chat
from meshnode.store import chat_control
from meshnode.engines.cognition.novelty import novelty
from meshnode.engines.cognition.tick_store import (  # noqa: F401  (KEEP_*, _checkpoint_of, _think: used by tests and bench)
    CORE_OUTAGE, DEFERRED_TYPES, ISOLATED, KEEP_MEMORY, KEEP_RESPONSES, NORMAL, STARTING, _as_dict,
    _checkpoint_of, _deferred, _digest, _emotions, _log, _outage, _prune_and_checkpoint, _rate, _recent, _think,
    _unread, _validation_history, _wake_up, paused_of, set_paused)
from meshnode.engines.cognition.validation import ADAPT_WINDOW, Verdict, adapted_trust, validate
from meshnode.engines.cognition.validator_health import ValidatorHealth
from meshnode.engines.cognition.wake import WakeSlot
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.keys import NodeKey

log = logging.getLogger("meshnode.engines.cognition")

OUTAGE_HINT = ("the agent is off: no LLM is configured, so what would wake it waits in your inbox, one line each;"
               " turn it on with `meshnode llm add NAME --url http://127.0.0.1:11434/v1 --model MODEL`")
FAILING_HINT = ("no registered LLM answers (each one's last error is listed): check that it runs at its URL with that"
                " model (`meshnode llm list`), or add another with `meshnode llm add`")


class Cycle:
    def __init__(self, store, key: NodeKey, clock, *, pause_s: float = 5.0, recent_k: int = 5,
                 repeat_below: float = 0.15, mesh_up=lambda: True, mesh=None, peer_validators=None,
                 peer_timeout_s: float = 60.0, processes=None, gate=None, tools: list[dict] | None = None,
                 validator_failures: int = 3, validator_retry_s: float = 300.0, metrics=None,
                 keep_traces: int = tick_traces.DEFAULT_KEEP, on_tick: Callable[[dict], None] | None = None,
                 send_limits=None, on_live: Callable[[dict], None] | None = None):
        self.store, self.key, self.clock = store, key, clock
        self.keep_traces = keep_traces  # tick_traces kept ([cognition] keep_tick_traces)
        self.paused_by: str | None = None  # a person's pause (who): no tick until resumed
        self.resumed = trio.Event()  # set by resume(); the paused loop waits on it
        self.on_tick = on_tick  # called with each tick's summary (the web's feed)
        # called as the main LLM's answer is written (live_answer.LiveAnswer: start, text, end; the web's feed)
        self.live = LiveAnswer(on_live)
        # reactor.send_limits.WakeSendLimits: what a woken agent may send, checked before the gate's outbound
        self.send_limits = send_limits
        self.metrics = metrics  # the node's counters (None: not counted)
        # validators failing validator_failures times in a row are set aside, asked again after the retry time
        self.health = ValidatorHealth(validator_failures, int(validator_retry_s * 1000))
        self.stalled = False  # commands are held because no validator gives a verdict (warned once)
        # async () -> [(DID, trust)]: the peers to ask for a verdict when the mesh is up (none: local only)
        self.peer_validators, self.peer_timeout_s = peer_validators, peer_timeout_s
        self.processes = processes  # processes.Processes: start/stop of allowlisted programs (None: off)
        self.gate = gate  # gate.Gate: the tools that touch the host (None: off)
        self.tools = tools  # offered to the LLM in the OpenAI tools format (None: commands in text only)
        self.pause_s, self.recent_k, self.repeat_below = pause_s, recent_k, repeat_below
        self.mesh_up = mesh_up  # no peers: isolated mode (validation stays local; the status says so)
        self.mesh = mesh  # for mesh commands (consensus proposals, messages, sync requests)
        self.ticks = 0
        self.mode = STARTING
        self.llm: str | None = None
        self.last_error: str | None = None
        self.llm_errors: dict[str, str] = {}  # the last error of each main LLM tried (gone once it answers)
        self.tried: list = []  # the main LLMs the last tick could ask (registry.mains), in order
        self.wake = trio.Event()
        self.wakes = WakeSlot(self)  # the reactor's bounded wakes (cognition/wake.py)
        self.idle = False
        self.streak = 0  # repetitions in a row
        self.plan: stagnation.Plan | None = None  # the anti-stagnation response in force
        self._before = 1.0  # novelty when the plan was made
        self._context_digest = ""
        self._unread = 0
        self._aux: set[int] = set()  # tasks whose auxiliary loop runs
        self.crashes = error_levels.CrashReporter(store, key, clock)  # crash -> a note to the person

    @property
    def paused(self) -> bool:
        return self.paused_by is not None

    async def pause(self, by: str = "cli") -> dict:
        """A person stops the agent: no tick (and no released command) until ``resume``; a tick in
        progress finishes. Kept across restarts (a config row); logged for the agent's context 4."""
        if not self.paused:
            self.resumed = trio.Event()
            self.paused_by = by  # at once: no tick starts while the row is written
            try:
                await self.store.write(set_paused, True, by)
            except BaseException:  # not kept: not paused (else a retry would skip the write)
                self.paused_by = None
                self.resumed.set()
                raise
        return self.status()

    async def resume(self, by: str = "cli") -> dict:
        if self.paused:
            await self.store.write(set_paused, False, by)
            self.paused_by = None
            self.resumed.set()
        return self.status()

    def status(self) -> dict:
        out = {"mode": self.mode, "ticks": self.ticks, "llm": self.llm, "last_error": self.last_error,
               "idle": self.idle, "paused": self.paused, "paused_by": self.paused_by,
               "processes": self.processes.running() if self.processes else None,
               "validators_failing": self.health.snapshot(self.clock()), "stalled": self.stalled,
               "wake": self.wakes.status(), "asking": self.live.asking(),
               "llms": [{"id": e.id, "model": e.model, "url": e.base_url,  # each main LLM and its last error
                         "error": self.llm_errors.get(e.id, "not asked yet" if self.mode == CORE_OUTAGE else None)}
                        for e in self.tried]}
        if self.mode == CORE_OUTAGE:
            out["hint"] = FAILING_HINT if self.tried else OUTAGE_HINT
        if self.gate is not None:  # the budget of tool calls of the current piece of work
            out["tool_calls"] = {"used": self.gate.limits.calls, "max": self.gate.limits.max_calls}
            if self.gate.mcp is not None:  # the outside tools' servers: up or not, and why
                out["mcp_servers"] = self.gate.mcp.clients.status()
        return out

    async def run(self) -> None:
        saved = await self.store.read(_checkpoint_of)
        if saved:  # resume after a crash or a restart where the last session left off
            self.ticks, self.streak = int(saved.get("ticks", 0)), int(saved.get("streak", 0))
            await self.store.write_background(_log, "resume", saved)
        # tick numbers go on from the last traced one (core-outage ticks leave no checkpoint)
        self.ticks = max(self.ticks, await self.store.read(tick_traces.last_tick))
        self.paused_by = await self.store.read(paused_of)  # a person's pause outlives a restart
        if self.paused:
            log.warning("the agent is paused (by %s): `meshnode mind resume` lets it think again", self.paused_by)
        if await self.store.read(held.waiting, "running"):  # the write lock only when there is something to mark
            try:
                await self.store.write_background(held.interrupted)
                log.warning("released commands that were running when the node stopped are marked failed, not rerun")
            except MeshnodeError as exc:  # the database busy with another process: at the next start
                log.warning("could not mark interrupted released commands: %s", exc.reason)
        async with trio.open_nursery() as helpers:  # auxiliary loops and processes live and die with the cycle
            if self.processes is not None:
                await helpers.start(self.processes.run)
            while True:
                if self.paused:  # a person's pause: nothing runs until they resume
                    await self.resumed.wait()
                    continue
                try:
                    if self.gate is not None:  # new work or a person's reset: a fresh budget of tool calls
                        await self.gate.refresh()
                    await self.tick()
                    if not self.paused:  # paused during the tick: it finished, nothing more runs
                        await self._run_approved()
                        await self.run_released()
                    await self._supervise(helpers)
                    self.crashes.recovered()
                except MeshnodeError as exc:  # e.g. the database busy with another process: next tick
                    log.warning("tick %d: %s", self.ticks, exc.reason)
                    self.last_error = exc.reason
                except Exception as exc:  # a crash: logged, told to the person, and the loop goes on
                    log.exception("tick %d failed", self.ticks)
                    self.last_error = f"{type(exc).__name__}: {exc}"
                    await self.crashes.report(f"main cycle, tick {self.ticks}", exc)
                await self._pause()

    async def _run_approved(self) -> None:
        """Calls a person approved since the last tick run now (no LLM needed: also in core outage)."""
        if self.gate is None:
            return
        for done in await self.gate.run_approved(beside=self._beside()):
            await self.store.write_background(_log, f"confirm:{done['confirmation']}", done,
                                              "ok" if done["ok"] else "error", self.llm)

    async def run_released(self) -> list[dict]:
        """Held commands a person released run now (no validation: the person decided), each
        logged for the next tick like any command's result; in isolated mode recorded as a
        decision taken without the mesh."""
        out = []
        if not await self.store.read(held.waiting, "released"):  # the common case: a read, no write lock
            return out
        for held_id, c, by in await self.store.write_background(held.claim_released):
            cmd = Command(c["cmd_id"], c["type"], c.get("args") or {}, c.get("description") or "",
                          c.get("target_llm"), bool(c.get("mutating", True)))
            result = await self._run_command(cmd)
            await self.store.write(held.finish, held_id, result)
            await self.store.write_background(_log, f"cmd:{cmd.cmd_id}", {**result, "released_by": by},
                                              "ok" if result["status"] == "ok" else "error", self.llm)
            if not self.mesh_up():
                await self.store.write_background(isolation.record_now, self.clock(), None,
                                                  [(_as_dict(cmd), result)], by)
            out.append({"id": held_id, **result})
        return out

    async def _push_gmp(self) -> None:
        """What follows the agent's GMP writes on the running node (``app.actions.gmp.follow``: their
        containers pushed to the peers concerned at once, reactions), waiting for nobody."""
        written, gmp = goals.take_written(self.key.did), getattr(self.mesh, "gmp", None)
        if written and gmp is not None:
            app = App(self.store, self.key, mesh=self.mesh, clock=self.clock, gmp=gmp)
            for name, result in written:
                try:
                    await gmp_actions.follow(app, name, result, wait_s=0)
                except MeshnodeError as exc:  # signed and stored already: sync carries it, the check reacts
                    log.info("after the agent's %s: %s", name, exc.reason)

    async def _run_command(self, cmd: Command) -> dict:
        if not _deferred(cmd):
            try:
                return await self.store.write(executor.run, self.key, self.clock(), cmd)
            finally:
                await self._push_gmp()
        mains = await self.store.read(registry.mains)
        if not mains:
            return await self._run_deferred(cmd, None)
        return await self._run_deferred(cmd, mains[0])

    async def _run_deferred(self, cmd: Command, endpoint) -> dict:
        """A command that needs the event loop: a gate tool, a send out of the node, a process, or the mesh."""
        if cmd.type in gate_commands.ASYNC_TYPES:
            async def reflect(prompt: str) -> str:
                if endpoint is None:
                    return "NOT READY -- no LLM is registered to check the work"
                return await self._reflect(endpoint, prompt)
            return await gate_commands.run(self.gate, cmd, reflect)
        if cmd.type in mcp_commands.ASYNC_TYPES:  # an outside tool (an MCP server's), through the gate
            return await mcp_commands.run(self.gate, cmd, self._beside())
        if sending.leaves_node(cmd):  # through the gate's outbound level
            outbound = self._outbound if self.gate is not None else None
            return await sending.run(outbound, self.mesh, self.store, self.key, self.clock(), cmd)
        if cmd.type in wake_report.ASYNC_TYPES:
            return await self.wakes.take(cmd)
        if cmd.type in processes.ASYNC_TYPES:
            return await self.processes.handle(cmd) if self.processes else {
                "cmd_id": cmd.cmd_id, "type": cmd.type, "status": "error", "error": "processes are off here"}
        return await mesh_commands.run(self.mesh, self.store, self.key, self.clock(), cmd)

    def _beside(self):
        """Where an outside tool's call past its budget goes on: beside the ticks, as a process."""
        return self.processes.beside if self.processes is not None else None

    async def _supervise(self, helpers) -> None:
        """Start the auxiliary loop of every running read-only task that has none."""
        for task_id, config in await self.store.read(auxiliary.running_tasks):
            if task_id not in self._aux:
                self._aux.add(task_id)
                helpers.start_soon(self._aux_loop, task_id, config)

    async def _until_resumed(self) -> None:
        while self.paused:
            await self.resumed.wait()

    async def _aux_loop(self, task_id: int, config: dict) -> None:
        try:
            await auxiliary.loop(self.store, self.key, self.clock, task_id, config, self.pause_s,
                                 until_resumed=self._until_resumed)
        except Exception as exc:  # a crash stops this loop only: its task is frozen, the person told
            await error_levels.aux_crashed(self.store, self.crashes, task_id, exc)
        finally:
            self._aux.discard(task_id)

    async def _outbound(self, tool: str, args: dict) -> dict | None:
        """The gate's ``outbound`` check of a send, after the limits of a reactor wake (``send_limits``)."""
        if self.send_limits is not None:
            self.send_limits.check(self.wakes, tool, args)
        return await self.gate.outbound(tool, args)

    def _processes_ended(self) -> int:
        return self.processes.finished if self.processes is not None else 0

    async def _pause(self) -> None:
        """The pause between ticks ([cognition] pause_seconds, or the LLM's own `cycle_settings`);
        in idle mode, until its timeout or, with on_note, until an unread note arrives, or with
        on_process, until a process ends."""
        if self.wakes.due():  # a reactor wake: tick now
            self.wake = trio.Event()
            return
        settings = await self.store.read(mind.cycle_settings)
        self.recent_k = int(settings.get("responses", self.recent_k))
        idle = settings.get("idle") or {}
        if idle.get("on"):
            self.idle = True
            unread, ended = await self.store.read(_unread), self._processes_ended()
            with trio.move_on_after(float(idle.get("timeout_seconds", 300))):
                while True:
                    with trio.move_on_after(1.0):
                        await self.wake.wait()
                    if self.wake.is_set() or (idle.get("on_process") and self._processes_ended() > ended) \
                            or (idle.get("on_note") and await self.store.read(_unread) > unread):
                        break
            if not self.wakes.due():  # a reactor wake interrupts idle mode; the cycle returns to it after
                await self.store.write_background(_wake_up)
        else:
            self.idle = False
            factor = self.plan.pause_factor if self.plan else 1.0  # a radical pause lasts longer
            with trio.move_on_after(float(settings.get("pause_seconds", self.pause_s)) * factor):
                await self.wake.wait()
        self.wake = trio.Event()

    async def tick(self) -> dict:
        """One tick (with the reactor's focus when a wake is due), timed (``cycle_tick_seconds``),
        traced (``tick_traces``) and told to ``on_tick``."""
        started = time.monotonic()
        summary = await self.wakes.around(self._tick)
        if self.metrics is not None:
            self.metrics.observe("cycle_tick_seconds", time.monotonic() - started)
        if self.on_tick is not None:
            try:
                self.on_tick(summary)
            except Exception:  # a listener's bug must not stop the agent
                log.exception("on_tick failed")
        return summary

    def _trace(self, started_ms: int, mode: str, llm_id: str | None, llm_ms: int | None, messages: list) -> dict:
        run = getattr(self.wakes, "_ticking", None)
        return {"started_ms": started_ms, "mode": mode, "llm_id": llm_id, "llm_ms": llm_ms,
                "wake_job": getattr(run, "job_id", None), "messages": messages}

    async def _tick(self) -> dict:
        self.ticks += 1
        now = self.clock()
        mains = self.tried = await self.store.read(registry.mains)
        answer, used, messages, llm_ms = None, None, [], None
        for endpoint in mains:  # the prompt names the mode this tick runs in if this LLM answers
            for restart in range(error_levels.MAX_RESTARTS + 1):  # a timeout restarts the tick (error_levels)
                messages, shown = await self.store.read(
                    contexts.build_shown, now_ms=now, tick=self.ticks, recent_k=self.recent_k,
                    mode=NORMAL if self.mesh_up() else ISOLATED, llm_id=endpoint.id, own_did=self.key.did,
                    focus=self.wakes.focus, outside=mcp_commands.catalogue(self.gate))
                digest = _digest(messages[-1]["content"])
                tuning = {}
                if self.plan is not None:  # cheapest first: tuned generation, and the strategy as a notice
                    messages[-1]["content"] += f"\n\n## Anti-stagnation\n{self.plan.notice}"
                    tuning = {"temperature": self.plan.temperature, "presence_penalty": self.plan.presence_penalty}
                try:
                    asked = time.monotonic()
                    with self.live.asked(self.ticks, endpoint.id, shown):
                        answer = await chat(endpoint, messages, tools=mcp_commands.offered(self.tools, self.gate,
                                                                                  contexts.BUDGET["outside"]),
                                            retry_timeouts=False, on_delta=self.live.text, **tuning)
                    llm_ms = int((time.monotonic() - asked) * 1000)
                    used = endpoint
                    self.llm_errors.pop(endpoint.id, None)
                    if shown:  # seen by the agent: the LLM answered a prompt that showed them
                        await self.store.write_background(chat_control.record_prompted, [d for d, _ in shown],
                                                          self.ticks, self.clock())
                    break
                except LLMError as exc:
                    self.last_error = self.llm_errors[endpoint.id] = exc.reason
                    log.warning("LLM %s: %s", endpoint.id, exc.reason)
                    if exc.code != "llm_timeout" or restart == error_levels.MAX_RESTARTS:
                        break
                    await self.store.write_background(error_levels.log_timeout, self.ticks, endpoint.id,
                                                      restart + 1, exc.reason)
            if answer is not None:
                break
        if answer is None:
            self.mode, self.llm = CORE_OUTAGE, None
            summary = {"tick": self.ticks, "mode": CORE_OUTAGE, "error": self.last_error or "no LLM registered",
                       "llms": {e.id: self.llm_errors.get(e.id) for e in mains}}
            await self.store.write_background(_outage, summary, {**self._trace(now, CORE_OUTAGE, None, None, []),
                                                                 "duration_ms": self.clock() - now},
                                              self.keep_traces)
            return summary
        was = self.mode
        self.mode, self.llm = (NORMAL if self.mesh_up() else ISOLATED), used.id
        if was != NORMAL and self.mode == NORMAL:  # the mesh is back (or up at start): revisit decisions made alone
            await self.store.write_background(isolation.revisit_task)
        recent = await self.store.read(_recent, self.recent_k)
        score = novelty(answer, recent)
        verdict = judged = None
        if score >= self.repeat_below:  # a repetition is not assessed, validated, stored or run again
            judged = await self._assess(used, recent[0] if recent else "", answer)
            verdict = await self._validate(messages[-1]["content"], answer, used.id)
        summary = await self.store.write_background(_think, self.key, self.clock(), self.ticks, used.id, answer,
                                                    score, verdict, judged, self.mode,
                                                    self._trace(now, self.mode, used.id, llm_ms, messages))
        summary.pop("response_id", None)
        await self._push_gmp()
        ran = []
        for cmd in summary.pop("deferred", []):
            result = await self._run_deferred(cmd, used)
            ran.append((_as_dict(cmd), result))
            await self.store.write_background(_log, f"cmd:{cmd.cmd_id}", result, "ok" if result["status"] == "ok" else "error",
                                   used.id)
            if cmd.task_id is not None:
                await self.store.write_background(error_levels.freeze, error_levels.failed_tasks([cmd], [result]),
                                                  used.id)
        if self.mode == ISOLATED and ran:
            await self.store.write_background(isolation.record_now, self.clock(), self.ticks, ran)
        guarded = self.gate.take_guarded() if self.gate is not None else 0  # loops and limits the gate refused
        await self._reflex(score, verdict is None or bool(guarded), digest)
        await self.store.write_background(_prune_and_checkpoint, {"ticks": self.ticks, "streak": self.streak, "llm": self.llm,
                                                       "plan": self.plan.strategy if self.plan else None},
                                          {"tick": self.ticks, "duration_ms": self.clock() - now, "summary": summary},
                                          self.keep_traces)
        return summary

    async def _validate(self, prompt: str, answer: str, main_id: str) -> Verdict:
        """The validation reflex with the validators that are not set aside, each weighted by its
        adapted trust; then note who answered, set aside who keeps failing, and say so once."""
        now = self.clock()
        validators = await self.store.read(registry.validators_with_trust)
        peers = await self.peer_validators() if self.peer_validators and self.mode == NORMAL else []
        aside = [n for n in [e.id for e, _ in validators] + [d for d, _ in peers] if not self.health.usable(n, now)]
        history = await self.store.read(_validation_history, 2 * ADAPT_WINDOW)
        factors = {name: a["factor"] for name, a in adapted_trust(history).items()}
        verdict = await validate([v for v in validators if v[0].id not in aside], prompt, answer, main_id,
                                 [p for p in peers if p[0] not in aside], self._ask_peer, set_aside=aside,
                                 adapt=factors)
        now = self.clock()
        for v in verdict.validators:
            if self.health.record(v["validator"], True, now) == "back":
                log.info("validator %s gives verdicts again", v["validator"])
        for f in verdict.failed:
            self._count("validator_no_verdict", reason=f["error"].split(":")[0].replace(" ", "_"))
            if self.health.record(f["validator"], False, now, f["error"]) == "set_aside":
                self._count("validator_set_aside")
                state = self.health.snapshot(now)[f["validator"]]
                first = state["times_set_aside"] == 1
                (log.warning if first else log.info)(
                    "validator %s set aside after %d failures in a row (last: %s); asked again in %.0f s",
                    f["validator"], self.health.failures, f["error"], self.health.retry_ms / 1000)
                await self.store.write_background(_log, "validator_set_aside", {"validator": f["validator"], **state},
                                                  "warning")
        if not verdict.passes:
            self._count("answers_held", kind="no_verdict" if verdict.no_verdict else "rejected")
        if verdict.no_verdict and not self.stalled:  # once per stall, however long it lasts
            self.stalled = True
            log.warning("commands are held: %s; see `meshnode mind held` (release or drop them there)",
                        verdict.why_held())
        elif self.stalled and (verdict.validators or (verdict.auto_pass and not verdict.set_aside)):
            self.stalled = False  # a validator answers again (passing while all are set aside is no end)
            log.info("validators give verdicts again; commands run or are held by their rating")
        return verdict

    def _count(self, name: str, **labels: str) -> None:
        if self.metrics is not None:
            self.metrics.inc(name, **labels)

    async def _reflect(self, endpoint, prompt: str) -> str:
        """Reflection before completion (the gate's submit): the main LLM checks its own work."""
        try:
            return await chat(endpoint, [{"role": "user", "content": prompt}], temperature=0.0, retries=1,
                              role="reflect")
        except LLMError as exc:
            return f"NOT READY -- the reflection could not run: {exc.reason}"

    async def _ask_peer(self, did: str, prompt: str, answer: str) -> tuple[int, str]:
        return await self.mesh.ask_validation(did, prompt, answer, self.peer_timeout_s)

    async def _assess(self, endpoint, previous: str, answer: str) -> assessment.Assessment | None:
        """The mini-query: the LLM's own view of what is new (None when it does not answer in form)."""
        known = await self.store.read(_emotions)
        try:
            reply = await chat(endpoint, assessment.prompt(known, previous, answer), temperature=0.0, retries=0,
                               role="assess")
        except LLMError as exc:
            log.info("assessment: %s", exc.reason)
            return None
        return assessment.parse(reply)

    async def _reflex(self, score: float, repeated: bool, digest: str) -> None:
        """Anti-stagnation: plan a response to a repetition; rate the last plan once an answer is new."""
        unread = await self.store.read(_unread)
        if repeated:
            self.streak += 1
            if self.plan is None:
                self._before = score
            self.plan = stagnation.plan(self.streak, max(0, unread - self._unread), digest != self._context_digest)
            await self.store.write_background(_log, "stagnation_plan", {"streak": self.streak, **self.plan.__dict__},
                                   "warning", self.llm)
        elif self.plan is not None:
            await self.store.write_background(_rate, self.key.did, self.plan, self._before, score)
            self.streak, self.plan = 0, None
        self._context_digest, self._unread = digest, unread
