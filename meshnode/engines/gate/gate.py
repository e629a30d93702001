"""The action gate: every tool call of the cognitive core passes here (seed 004).

perceive (safe reads, through the session's drafts) -> plan -> draft (file
changes and command effects become drafts) -> reflect (the agent checks its
own work, ``submit``) -> review (a person: ``meshnode drafts``) -> commit (a
snapshot first, then all or nothing) -> rollback (``meshnode snapshots``).

A call is checked in this order: its arguments against the tool's schema;
the guards (loop detector, iteration limit), which also tell the
anti-stagnation reflex; its risk. ``destructive`` calls become confirmation
requests and the call returns at once; the loop runs them once a person
approves (``run_approved``). Every refusal is a GateError with a reason the
LLM reads in its next tick. Commands that send data out of the node pass
``outbound`` (``gate.outbound``): the kinds of send ``[gate] outbound_confirm``
names become confirmation requests too, run by ``send_out`` once approved.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Callable

import httpx
import trio

from meshnode.engines.gate import GateError, argschema, guards, outbound, runner, scratch
from meshnode.records.gate import budget, confirm, drafts
from meshnode.base.errors import MeshnodeError
from meshnode.engines.gate.jail import Jail
from meshnode.store.sharing import friends
from meshnode.engines.gate.tools import DESTRUCTIVE, TOOLS, RiskPolicy

log = logging.getLogger("meshnode.engines.gate")
_NOT_READ = object()

MAX_READ_BYTES = 256 * 1024
HTTP_MAX_BYTES = 1024 * 1024
INBOX = "/inbox"  # the web notebook's page of what waits for the person (faces/web/static/inbox.html)
REFLECT_DIFF_CHARS = 24 * 1024
REFLECT_PROMPT = (
    "REFLECTION BEFORE REVIEW. Before your drafts go to a person, check your own work: is the goal met; do the"
    " changes contradict each other or what you were told; do they keep the ethics policies and the workspace"
    " rules; was a test or dry run possible, and did it pass? Answer on the first line 'READY -- <why>' or"
    " 'NOT READY -- <what to fix>'.")


@dataclass(frozen=True)
class GateSettings:
    jail: Jail
    commands: runner.CommandPolicy
    risk: RiskPolicy
    scratch_dir: Path
    session: str = "core"
    loop_window: int = 20
    loop_repeats: int = 3
    max_calls_per_task: int = 200
    calls_quiet_ms: int = 600_000
    outbound_confirm: frozenset[str] = frozenset(outbound.DEFAULT_CONFIRM)
    confirm_ttl_ms: int = confirm.DEFAULT_TTL_MS
    http_timeout_s: float = 10.0


class Gate:
    def __init__(self, store, settings: GateSettings, clock: Callable[[], int],
                 tell_user: Callable[[str], Awaitable[None]] | None = None,
                 on_guard: Callable[[str, str], None] | None = None,
                 send_out: Callable[[str, dict, str | None], Awaitable[dict]] | None = None,
                 spawner: Callable[[dict], Awaitable[dict]] | None = None,
                 mcp: Callable[["Gate"], object] | None = None):
        self.store, self.settings, self.clock = store, settings, clock
        self.tell_user = tell_user  # async (text): a private note to the user
        self.on_guard = on_guard  # (kind, reason): told of each refusal of the guards
        self._guarded = 0  # refusals of the guards not yet taken by the anti-stagnation reflex (take_guarded)
        self.loops = guards.LoopDetector(settings.loop_window, settings.loop_repeats)
        self.limits = guards.IterationLimiter(settings.max_calls_per_task, settings.calls_quiet_ms)
        self.work = "main"  # the piece of work the agent is on (budget.work), refreshed every tick
        self._reset_seen: str | None | object = _NOT_READ
        self._told_limit = False
        # async (tool, args, decided_by) -> command result: sends an approved outbound command
        # (cognition.sending.approved); None where nothing can send
        self.send_out = send_out
        # async (args) -> the spawn's result: creates and starts a child node (the node's); None where no node runs
        self.spawner = spawner
        # mcp_tools.calls.McpTools: the outside tools (mcp.NAME.tool), built here by ``mcp(gate)``; None: none
        self.mcp = mcp(self) if mcp is not None else None

    @property
    def jail(self) -> Jail:
        return self.settings.jail

    async def call(self, tool: str, args: dict, *, task: str | None = None, approved: int | None = None) -> dict:
        """Run one tool call, or refuse it (GateError), or ask a person (``needs_confirmation``)."""
        if tool not in TOOLS:
            raise GateError("unknown_tool", f"no tool {tool[:40]!r}; tools: {', '.join(TOOLS)}")
        argschema.check(args, TOOLS[tool].parameters)
        args = self._normalized(tool, args)  # one spelling per path and URL: for risk rules, guards, requests
        risk = self.settings.risk.risk_of(tool, args)
        if approved is None:
            self.guard(tool, args, task)
            if risk == DESTRUCTIVE:
                return await self._ask(tool, args, risk)
        try:
            return await self._run(tool, args)
        except (OSError, UnicodeError) as exc:  # the file system's own refusals, as readable reasons
            raise GateError("io_error", f"{tool}: {type(exc).__name__}: {exc}"[:300]) from None

    def guard(self, tool: str, args: dict, task: str | None = None) -> None:
        """The loop detector and the iteration limit of the current piece of work (or ``task``)
        (GateError); both tell the anti-stagnation reflex."""
        try:
            self.loops.check(tool, args)
            self.limits.check(task or self.work, self.clock())
        except GateError as exc:
            self._guarded += 1
            if self.on_guard:
                self.on_guard(exc.code, exc.reason)
            raise

    def take_guarded(self) -> int:
        """The guards' refusals since the last call (the cycle's anti-stagnation reflex hears of them)."""
        guarded, self._guarded = self._guarded, 0
        return guarded

    async def refresh(self) -> None:
        """Once per tick, before the agent acts: a new task or goal starts a new piece of work
        (a fresh budget of calls), and so does a person's reset (``budget.request_reset``). When
        the budget is spent, the person is told once how to let the agent go on."""
        work, marker = await self.store.read(budget.state)
        if self._reset_seen is not _NOT_READ and marker != self._reset_seen:
            self.limits.reset()
            log.info("the agent's budget of tool calls was reset by a person")
        self._reset_seen = marker  # a reset made before this run: the count starts at 0 anyway
        self.work = work
        if not self.limits.exhausted or self.limits.work != work:
            self._told_limit = False
        elif not self._told_limit and self.tell_user is not None:
            self._told_limit = True
            await self.tell_user(f"The agent used its {self.limits.max_calls} tool calls for this piece of work"
                                 " and is refused more. `meshnode gate reset-limit` lets it go on; so does a new"
                                 f" task or goal, or {guards.duration(self.limits.quiet_ms)} without tool calls.")

    def _normalized(self, tool: str, args: dict) -> dict:
        if "path" in args:
            args = {**args, "path": self.jail.resolve(args["path"])}
        if tool == "http_fetch":
            args = {**args, "url": _checked_url(args["url"])}
        return args

    async def outbound(self, tool: str, args: dict) -> dict | None:
        """A send out of the node (``outbound.TOOLS``): a confirmation request when its kind waits
        for a person ([gate] outbound_confirm), else None: it may go now."""
        known = set(await self.store.read(friends))
        kind = outbound.kind(tool, args, known)
        if kind is None or kind not in self.settings.outbound_confirm:
            return None
        return await self._ask(tool, args, outbound.OUTBOUND, f"{outbound.KINDS[kind][0]}: it leaves the node")

    async def ask(self, tool: str, args: dict, risk: str, why: str | None = None) -> dict:
        """A confirmation request for ``tool`` (also one outside TOOLS, such as an MCP tool)."""
        return await self._ask(tool, args, risk, why)

    async def _ask(self, tool: str, args: dict, risk: str, why: str | None = None) -> dict:
        why = why or f"{tool} is {risk}"
        if tool == "http_fetch":
            why += f" (host {httpx.URL(args['url']).host!r} is not in [gate] http_hosts)"
        now = self.clock()
        req = await self.store.write(confirm.request, self.settings.session, tool, args, risk, why, now,
                                     self.settings.confirm_ttl_ms)
        if self.tell_user is not None and req["created_ms"] == now:  # asked once, not at every repetition
            shown = json.dumps(args, ensure_ascii=False)
            shown = shown if len(shown) <= 2000 else shown[:2000] + " ... (all of it: meshnode confirm list)"
            await self.tell_user(f"The agent asks to run {tool} {shown} ({why}). It is waiting in your inbox: {INBOX}"
                                 f" (or `meshnode confirm approve {req['id']}` / `meshnode confirm reject {req['id']}`);"
                                 " it expires unanswered.")
        return {"status": "needs_confirmation", "confirmation": req["id"], "expires_ms": req["expires_ms"],
                "note": "a person was asked; carry on with other work, the result comes in a later tick"}

    async def run_approved(self, beside=None) -> list[dict]:
        """Run the calls a person approved since the last time, each at most once: a request is
        claimed before it runs, so a crash in between leaves it failed, never run twice. ``beside``:
        where an outside tool's call past its budget goes on (``McpTools.call``)."""
        done = await self.mcp.denied() if self.mcp is not None else []  # the agent hears of outside calls denied
        for req in await self.store.read(confirm.approved, self.settings.session):
            if not await self.store.write(confirm.claim, req["id"]):
                continue
            try:
                if req["tool"] in outbound.TOOLS:
                    result, ok = await self._send_approved(req["tool"], req["args"], req.get("decided_by"))
                elif req["tool"].startswith("mcp.") and self.mcp is not None:
                    result, ok = await self.mcp.call(req["tool"], req["args"], approved=req["id"], beside=beside), True
                else:
                    result, ok = await self.call(req["tool"], req["args"], approved=req["id"]), True
            except GateError as exc:
                result, ok = {"error": exc.reason, "code": exc.code}, False
            except Exception as exc:  # a bug must not wedge the queue: the request fails, the next runs
                log.exception("approved request %s", req["id"])
                result, ok = {"error": f"{type(exc).__name__}: {exc}"[:300], "code": "internal"}, False
            await self.store.write(confirm.finish, req["id"], ok, result)
            done.append({"confirmation": req["id"], "tool": req["tool"], "ok": ok, "result": result})
        return done

    async def _send_approved(self, tool: str, args: dict, decided_by: str | None) -> tuple[dict, bool]:
        if self.send_out is None:
            raise GateError("no_sender", f"{tool} cannot be sent from here (no cognitive cycle runs)")
        sent = await self.send_out(tool, args, decided_by)
        return sent, sent.get("status") == "ok"

    async def _run(self, tool: str, args: dict) -> dict:
        s, jail = self.settings.session, self.jail
        if tool == "read_file":
            data = await self.store.write(drafts.read_through, jail, s, args["path"],
                                          int(args.get("max_bytes", MAX_READ_BYTES)))
            return {"path": jail.resolve(args["path"]), "size": len(data), "text": data.decode("utf-8", "replace")}
        if tool == "list_dir":
            return {"entries": await trio.to_thread.run_sync(jail.list_dir, args.get("path", "."))}
        if tool == "search_files":
            return {"matches": await trio.to_thread.run_sync(jail.search, args["pattern"], args.get("path", "."))}
        if tool == "patch_file":
            return await self.store.write(drafts.draft_patch, jail, s, args["path"], args["search"], args["replace"])
        if tool == "write_file":
            return await self.store.write(drafts.draft_write, jail, s, args["path"], args["content"].encode("utf-8"))
        if tool == "delete_file":
            return await self.store.write(drafts.draft_delete, jail, s, args["path"])
        if tool == "run_command":
            result, drafted, ignored = await self.command([args["program"], *args.get("args", [])])
            return {**result.summary(), "drafted": drafted, "ignored": ignored}
        if tool == "spawn":
            return await self._spawn(args)
        return await self._fetch(args["url"])

    async def _spawn(self, args: dict) -> dict:
        """A child node, once a person approved (the tool is destructive); the spawn's own refusals
        (max_children, max_depth, ...) come back as GateErrors with its code."""
        if self.spawner is None:
            raise GateError("no_spawner", "spawn needs the running node (no node wired a spawner to this gate)")
        try:
            return await self.spawner(dict(args))
        except GateError:
            raise
        except MeshnodeError as exc:
            raise GateError(exc.code, exc.reason) from None

    def precheck(self, argv: list[str]) -> str:
        """Refuse a command line before anything runs (GateError); its risk otherwise."""
        _confine_arguments(argv[1:])
        runner.check_command(argv, self.settings.commands)
        return self.settings.risk.risk_of("run_command", {"program": argv[0], "args": argv[1:]})

    async def command(self, argv: list[str], timeout_s: float | None = None):
        """Run ``argv`` in a scratch copy of the session's workspace; what it changes comes back as
        drafts (a change whose write_file/delete_file risk is destructive becomes a confirmation
        request instead). Returns (runner.CommandResult, drafted paths, ignored changes with reasons)."""
        try:
            return await self._command(argv, timeout_s)
        except (OSError, UnicodeError) as exc:
            raise GateError("io_error", f"{argv[0]}: {type(exc).__name__}: {exc}"[:300]) from None

    async def _command(self, argv: list[str], timeout_s: float | None):
        self.precheck(argv)
        policy = self.settings.commands
        if timeout_s is not None:
            policy = dataclasses.replace(policy, timeout_s=timeout_s)
        uid = policy.run_as_uid
        if uid is None and os.geteuid() == 0:
            uid = runner.NOBODY_UID
        folder, manifest = await self.store.write(scratch.prepare, self.jail, self.settings.session,
                                                  self.settings.scratch_dir, uid)
        try:
            result = await runner.run_command(argv, cwd=folder, policy=policy,
                                              records=scratch.records_folder(self.settings.scratch_dir))
            changed, ignored = await trio.to_thread.run_sync(scratch.changes, folder, manifest)
        finally:
            with trio.CancelScope(shield=True):  # a stopped process leaves no scratch folder behind
                await trio.to_thread.run_sync(scratch.remove, folder)
        drafted = []
        for rel, content in sorted(changed.items()):
            tool = "delete_file" if content is None else "write_file"
            try:
                if self.settings.risk.risk_of(tool, {"path": rel}) == DESTRUCTIVE:
                    if content is not None:  # the content is not kept for later: the person is told why
                        ignored.append(f"{rel}: writing it needs a person's confirmation; use write_file")
                        continue
                    asked = await self._ask(tool, {"path": rel}, DESTRUCTIVE)
                    ignored.append(f"{rel}: deleting it needs a person's confirmation (request"
                                   f" {asked['confirmation']})")
                    continue
                if content is None:
                    await self.store.write(drafts.draft_delete, self.jail, self.settings.session, rel)
                else:
                    await self.store.write(drafts.draft_write, self.jail, self.settings.session, rel, content)
                drafted.append(rel)
            except GateError as exc:
                ignored.append(f"{rel}: {exc.reason}")
        return result, drafted, ignored

    async def _fetch(self, url: str) -> dict:
        deadline = self.settings.http_timeout_s * 3  # per read, and for the whole: a drip-feed ends too
        try:
            with trio.fail_after(deadline):
                return await self._get(url)
        except trio.TooSlowError:
            raise GateError("fetch_failed", f"{url[:200]} took longer than {deadline:.0f} s") from None

    async def _get(self, url: str) -> dict:
        try:
            async with httpx.AsyncClient(timeout=self.settings.http_timeout_s, follow_redirects=False) as client:
                async with client.stream("GET", url) as response:
                    body = bytearray()
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > HTTP_MAX_BYTES:
                            del body[HTTP_MAX_BYTES:]
                            break
                    return {"url": url, "status": response.status_code,
                            "content_type": response.headers.get("content-type", ""),
                            "location": response.headers.get("location"), "truncated": len(body) >= HTTP_MAX_BYTES,
                            "text": bytes(body).decode("utf-8", "replace")}
        except (httpx.HTTPError, httpx.InvalidURL, ValueError, UnicodeError) as exc:
            raise GateError("fetch_failed", f"{url[:200]}: {type(exc).__name__}: {exc}"[:300]) from None

    async def submit(self, summary: str, reflect: Callable[[str], Awaitable[str]]) -> dict:
        """Reflection before completion: the agent's LLM checks the session's open drafts; when it
        judges them ready, the user is told they wait for review."""
        review = [r for r in await self.store.write(drafts.review, self.jail, self.settings.session)
                  if r["status"] in ("pending", "accepted")]
        if not review:
            raise GateError("nothing_to_review", "there are no open drafts to submit")
        diffs = "\n".join(f"--- {r['path']}{' (conflict)' if r['conflict'] else ''}\n{r['diff']}" for r in review)
        reply = await reflect(f"{REFLECT_PROMPT}\n\n# What you say you did\n{summary}\n\n# Your drafts\n"
                              f"{diffs[:REFLECT_DIFF_CHARS]}")
        first = (reply.strip().splitlines() or [""])[0].strip()
        ready = first.upper().startswith("READY")
        paths = [r["path"] for r in review]
        await self.store.write(_record_submission, self.settings.session, summary, reply[:4000], ready, paths,
                               self.clock())
        if ready:
            self.limits.reset()  # a piece of work is done: the next one gets a fresh budget of calls
        if ready and self.tell_user is not None:
            await self.tell_user(f"{len(paths)} draft(s) wait for your review: {', '.join(paths)[:500]}. "
                                 f"The agent says: {summary[:500]}. They are waiting in your inbox: {INBOX}"
                                 " (or `meshnode drafts list --diff`).")
        return {"ready": ready, "reflection": first[:300], "drafts": paths,
                "next": "a person reviews them now" if ready else "fix what the reflection found, then submit again"}


def _confine_arguments(args: list[str]) -> None:
    """Arguments that name paths stay inside the (scratch) workspace: no absolute paths, no
    ``..``, no home shortcuts, also after an ``--option=`` prefix."""
    for arg in args:
        values = [arg]
        if arg.startswith("-") and "=" in arg:
            values.append(arg.split("=", 1)[1])
        if arg.startswith("-") and not arg.startswith("--"):
            values.append(arg[2:])  # an attached short option's value: -f/etc/passwd
        for value in values:
            parts = value.replace("\\", "/").split("/")
            if value.startswith(("/", "~")) or ".." in parts:
                raise GateError("outside_jail", f"argument {arg[:80]!r} points outside the workspace; use paths"
                                " relative to it")


def _checked_url(raw: str) -> str:
    """The URL parsed once, in the form every later step (risk, request) reads; GateError if it
    is not a plain http(s) URL with a host."""
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in raw):
        raise GateError("bad_url", "a URL may not contain spaces or control characters")
    try:
        url = httpx.URL(raw)
    except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
        raise GateError("bad_url", f"not a URL: {exc}"[:200]) from None
    if url.scheme not in ("http", "https") or not url.host:
        raise GateError("bad_url", "only http:// and https:// URLs with a host can be fetched")
    return str(url)


def _record_submission(db, session: str, summary: str, reflection: str, ready: bool, paths: list[str],
                       now: int) -> None:
    with db.transaction() as conn:
        conn.execute("INSERT INTO gate_submissions (session, summary, reflection, ready, drafts, created_ms)"
                     " VALUES (?, ?, ?, ?, ?, ?)", (session, summary, reflection, int(ready), json.dumps(paths), now))
