"""Goals and tasks on the running node: the GMP service (``meshnode.records.gmp.service``) wired to the mesh.

The service decides what to sign; this class carries it out on the network
(protocols/gmp.md sections 6 to 8):

* after each write of the application's GMP actions (``goal_*``, ``task_*``,
  meshnode.app.actions.gmp), ``published`` pushes what it returns at once
  (best effort: a push that fails is counted and left to sync) and reacts to
  what was written;
* every GMP container admitted from the network (push, sync, fetch) is
  reacted to (``service.on_admitted``: receipts, the assigned version after an
  acceptance), and one held aside as pending has its missing containers
  fetched from the peer that sent it;
* every ``check_seconds``: tasks whose holder is dead past the grace (or
  overdue) are taken back (``service.reassign_stale``) and offered again: to the
  goal's participants first (``domain.gmp.reoffer``), else to peers found by the
  task's tags, never the removed holder; offers without a receipt after
  ``receipt_seconds`` are pushed again, twice at most, and so are versions
  assigning someone that got no receipt from it; the receipts this node owes
  and has not made (a reaction lost to a restart or a flood) are made, at
  start and at each check. A task nobody takes is
  listed in the goal owner's inbox (``records.inbox``, kind ``task_unclaimed``);
* in the same check, delegation that runs by itself (``records.gmp.delegate``, gmp.md 6.3 and 8):
  as a goal's participant, this node takes over an overdue task whose creator did not act, at its
  steward rank's time, and offers it again; as a contested task's delegator, it offers it to the
  best approved CogConsensus nominee once ``vote_seconds`` are over, or to the nominee the binding
  MeshConsensus decision names; as a validator, it requests those decisions; pending containers
  waiting for a MeshConsensus height this node has decided since are judged again.

Its dependencies are explicit (store, mesh, key, settings, metrics, clock), so
a test can drive it with fakes. Pushes run in its own nursery: an action waits
for them a short while, then returns and lets them finish.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Callable

import trio

from meshnode.base.container import now_ms
from meshnode.base.errors import MeshnodeError
from meshnode.domain.gmp import reoffer
from meshnode.net import mesh_gmp_queries as q
from meshnode.net.budget import BoundedLRU
from meshnode.net.liveness import Liveness
from meshnode.records.gmp.reads import bundle

log = logging.getLogger("meshnode.domain.gmp")

RETRIES = 2  # pushes of an unanswered offer after the first
FETCH_TRIES = 3  # fetches of one pending container's missing DIDs
PUSH_WAIT_S = 5.0  # how long a command waits for its pushes before it answers
PUSH_TIMEOUT_S = 20.0  # one target's pushes, reach included
LOOKUP_TIMEOUT_S = 20.0
MAX_TAGS = 8  # tags of one task looked up as interests
REOFFERS_PER_CHECK = 8  # tasks taken back offered again per check (each costs interest lookups)
REOFFER_BUDGET_S = 60.0  # the rest waits for the next check (the views remember what is left)
QUEUE = 1024  # admitted DIDs waiting for a reaction
PENDING_WATCHED = 4096  # pending containers looked at again after each batch of arrivals
FETCHES_IN_FLIGHT = 16  # fetches of missing containers running at once (in the background)


@dataclass(frozen=True)
class GmpSettings:
    offer_s: float = 3600.0
    receipt_s: float = 60.0
    dead_grace_s: float = 600.0
    check_s: float = 30.0
    min_trust: float = 0.0  # [sync] min_trust: candidates below it are left out
    vote_s: float = 3600.0  # how long participants vote on a contested task's nominations

    @classmethod
    def from_config(cls, config) -> "GmpSettings":
        gmp = config.values["gmp"]
        return cls(float(gmp["offer_seconds"]), float(gmp["receipt_seconds"]), float(gmp["dead_grace_seconds"]),
                   float(gmp["check_seconds"]), float(config.values["sync"]["min_trust"]), float(gmp["vote_seconds"]))


def rank_candidates(lineage: str, facts: dict[str, tuple[float, int]], live: dict[str, bool],
                    min_trust: float) -> list[str]:
    """Candidates for a task, best first (gmp.md 6.2): liveness ok, then trust, then fewer
    open tasks held, then SHA-256(lineage id ‖ DID); those trusted below ``min_trust`` are left out."""
    def key(did: str):
        trust, held = facts[did]
        return (not live.get(did, False), -trust, held, hashlib.sha256((lineage + did).encode()).digest())

    return sorted((d for d, (trust, _) in facts.items() if trust >= min_trust), key=key)


class MeshGmp:
    def __init__(self, store, mesh, key, settings: GmpSettings, metrics, clock: Callable[[], int] = now_ms,
                 service=None, hooks=None):
        """``hooks``: the mesh's ``MeshHooks``, which this service subscribes to (GMP arrivals, the
        peers it works with); None in tests that drive it alone."""
        if service is None:
            from meshnode.records.gmp import service
        self.store, self.mesh, self.key, self.settings = store, mesh, key, settings
        self.metrics, self.clock, self.service = metrics, clock, service
        self._nursery: trio.Nursery | None = None
        self._arrived_send, self._arrived = trio.open_memory_channel(QUEUE)
        self._reacted = BoundedLRU(8192)  # DIDs already reacted to: on_admitted runs once per container
        self._pending: dict[str, int] = {}  # DID held aside -> fetches of its missing DIDs so far
        self._retries: dict[tuple[str, str], int] = {}  # (offer or version, to whom) -> pushes again so far
        self._fetching: set[str] = set()  # pending DIDs whose missing containers are being fetched
        if hooks is not None:
            hooks.serve_gmp(self)

    # --- running ------------------------------------------------------------------

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self._react_forever)
            nursery.start_soon(self._check_forever)
            nursery.start_soon(self._background, "making the receipts owed", self._owed_receipts)
            task_status.started(self)
            await trio.sleep_forever()

    def arrived(self, did: str, received_from: str | None) -> None:
        """A GMP container stored from the network, or pushed again by its author (called by the
        Mesh; never blocks)."""
        try:
            self._arrived_send.send_nowait((did, received_from))
        except trio.WouldBlock:  # a flood: the periodic check takes up acceptances dropped here
            self.metrics.inc("gmp_reactions_dropped")

    async def sync_peers(self) -> set[str]:
        """Peers sync sessions must reach besides connected ones and friends: those sharing a goal."""
        return set(await self.store.read(q.audience_peers, self.key.did))

    async def coworkers(self) -> set[str]:
        """Peers whose containers are not a stranger's because this node chose to work with them."""
        return set(await self.store.read(q.coworkers, self.key.did))

    # --- what follows a write --------------------------------------------------------

    async def published(self, name: str, result: dict, wait_s: float = PUSH_WAIT_S) -> dict:
        """What follows GMP write ``name`` (its service ``result``) on the running node: push what it
        says at once, react to what it wrote, refresh who this node works with; the push report
        ({"done", "failed", "later"}) after waiting up to ``wait_s`` for the pushes. The
        application's GMP actions call it."""
        self.metrics.inc("gmp_written", cmd=name)
        pushed = await self.push(result.get("push", []), wait_s=wait_s)
        await self._react(_written(result), wait_s=wait_s)
        await self._refresh_known()  # a goal made or an offer accepted: new coworkers, no strangers now
        return pushed

    async def write(self, name: str, kwargs: dict) -> dict:
        """Call mutating service function ``name`` as this node for itself (an offer made again after
        a task was taken back), then what follows it (``published``)."""
        fn = getattr(self.service, name)
        now = self.clock()
        result = dict(await self.store.write(lambda db: fn(db, self.key, now, **kwargs)))
        result["pushed"] = await self.published(name, result)
        return result

    async def _refresh_known(self) -> None:
        if self.mesh is not None:
            await self.mesh.refresh_known()

    async def liveness(self) -> dict[str, str]:
        """DID -> liveness state, as this node sees it now (stored rows for peers it forgot)."""
        stored = await self.store.read(q.liveness_since)
        live = {d: s.value for d, s in self.mesh.liveness.peers().items()} if self.mesh else {}
        return {**{d: s for d, (s, _) in stored.items()}, **live}

    # --- pushing --------------------------------------------------------------------

    async def push(self, pushes: list[dict], wait_s: float = PUSH_WAIT_S) -> dict:
        """Push each {"to", "dids"} at once (one job per target, its containers in order); wait up to
        ``wait_s`` and report {"done": [DIDs of targets], "failed": [...], "later": [...]}."""
        by_target: dict[str, list[str]] = {}
        for p in pushes or []:
            to = p.get("to")
            if isinstance(to, str) and to != self.key.did:
                by_target.setdefault(to, []).extend(d for d in p.get("dids", []) if d not in by_target.get(to, []))
        report = {"done": [], "failed": [], "later": []}
        if not by_target or self.mesh is None or self._nursery is None:
            report["later"] = sorted(by_target)
            return report
        finished = trio.Event()
        left = [len(by_target)]

        async def one(to: str, dids: list[str]) -> None:
            try:
                ok = await self._push_to(to, dids)
            except Exception as exc:  # runs in the service's nursery: an escape would take the node down
                log.warning("GMP push to %s failed: %s: %s", to, type(exc).__name__, exc)
                self.metrics.inc("gmp_push_failed")
                ok = False
            report["done" if ok else "failed"].append(to)
            left[0] -= 1
            if not left[0]:
                finished.set()

        for to, dids in sorted(by_target.items()):
            self._nursery.start_soon(one, to, dids)
        with trio.move_on_after(wait_s):
            await finished.wait()
        report["later"] = sorted(set(by_target) - set(report["done"]) - set(report["failed"]))
        return report

    async def _is_dead(self, did: str) -> bool:
        """Dead by liveness now, or last heard dead (the Mesh forgets dead strangers; the store does not)."""
        state = self.mesh.liveness.state(did)
        if state is not None:
            return state is Liveness.DEAD
        return (await self.store.read(q.liveness_since)).get(did, ("", 0))[0] == "dead"

    async def _push_to(self, to: str, dids: list[str]) -> bool:
        if await self._is_dead(to):
            self.metrics.inc("gmp_push_skipped", reason="dead")  # sync carries it when it is back
            return False
        now = self.clock()
        containers = [c for c in [await self.store.read(lambda db, d=d: db.load_container(d, now_ms=now))
                                  for d in dids] if c is not None]
        if not containers:
            return True
        try:
            with trio.fail_after(PUSH_TIMEOUT_S):
                ack = await self.mesh.push(to, containers)
        except (MeshnodeError, trio.TooSlowError) as exc:
            log.info("GMP push to %s: %s (left to sync)", to, getattr(exc, "reason", "timed out"))
            self.metrics.inc("gmp_push_failed")
            return False
        for item in ack.get("rejected", []) if isinstance(ack, dict) else []:
            log.warning("%s refused GMP container %s: %s %s", to, item.get("index"), item.get("code"),
                        item.get("reason"))
            self.metrics.inc("gmp_push_rejected", code=str(item.get("code"))[:40])
        self.mesh.remember_refusals(to, containers, ack)  # not pushed to it again by sync
        held_aside = ack.get("pending", []) if isinstance(ack, dict) else []
        if held_aside:  # delivered, not admitted yet: the peer fetches what they name from this node
            self.metrics.inc("gmp_push_pending", len(held_aside))
        self.metrics.inc("gmp_pushed", len(containers))
        return True

    # --- reacting to what arrives ------------------------------------------------------

    async def _react_forever(self) -> None:
        while True:
            batch = [await self._arrived.receive()]
            while True:
                try:
                    batch.append(self._arrived.receive_nowait())
                except trio.WouldBlock:
                    break
            await self._background("reacting to GMP containers", lambda: self._react_to_arrivals(batch))

    async def _react_to_arrivals(self, batch: list[tuple[str, str | None]]) -> None:
        senders = dict(batch)
        dids = list(dict.fromkeys([*senders, *self._pending]))
        state = await self.store.read(q.pending_state, dids)
        admitted = [d for d in dids if state.get(d, {}).get("admitted")]
        await self._receipt_again(admitted)
        for did in dids:
            if did not in state:  # pending ones dropped (too old, too many): nothing more to do
                self._pending.pop(did, None)
            elif state[did].get("admitted"):
                self._pending.pop(did, None)
            else:
                self._fetch_soon(did, state[did], senders.get(did))
        if await self._react(admitted):  # (a container pushed again by its author was reacted to before)
            await self._refresh_known()  # an assignment of this node makes the task's creator a coworker

    async def _receipt_again(self, dids: list[str]) -> None:
        """A receipt this node made for a container that arrives again is pushed again to its sender:
        an offer or a version pushed again by its author means the receipt did not reach it (its push
        was lost). A container just arrived has no receipt yet: ``_react`` makes it."""
        made = await self.store.read(q.receipts_made, self.key.did, dids) if dids else []
        if made:
            self.metrics.inc("gmp_receipts_again", len(made))
            await self.push([{"to": to, "dids": [receipt]} for receipt, to in made], wait_s=0)

    def _fetch_soon(self, did: str, pending: dict, sender: str | None) -> None:
        """Fetch what ``did`` waits for in the background: a peer that does not answer must not hold
        up the reactions (receipts, assignments) to everything else that arrives."""
        if did in self._fetching or self._nursery is None:
            return
        if len(self._fetching) >= FETCHES_IN_FLIGHT:  # tried again after a later batch of arrivals
            self.metrics.inc("gmp_fetch_deferred")
            if did not in self._pending and len(self._pending) < PENDING_WATCHED:
                self._pending[did] = 0  # watched, so a later batch looks at it again
                self.metrics.inc("gmp_pending")
            return
        self._fetching.add(did)

        async def fetch() -> None:
            try:
                await self._fetch_missing(did, pending, sender)
            except Exception as exc:  # a background task must never take the node down
                log.exception("fetching what %s waits for failed", did)
                self.metrics.inc("gmp_errors", where=type(exc).__name__)
            finally:
                self._fetching.discard(did)

        self._nursery.start_soon(fetch)

    async def _fetch_missing(self, did: str, pending: dict, sender: str | None) -> None:
        """Fetch what a pending container waits for, from the peer that sent it."""
        tries = self._pending.get(did)
        if tries is None:
            self.metrics.inc("gmp_pending")
            tries = 0
        if tries >= FETCH_TRIES:
            return
        self._pending[did] = tries + 1
        while len(self._pending) > PENDING_WATCHED:  # the store keeps them; sync releases them
            del self._pending[next(iter(self._pending))]
        peer = pending.get("from") or sender
        missing = [m for m in pending.get("missing", []) if isinstance(m, str) and m.startswith("did:")][:64]
        if not peer or not missing or peer == self.key.did:
            return
        try:
            with trio.fail_after(PUSH_TIMEOUT_S):
                got = await self.mesh.fetch(peer, missing)
        except (MeshnodeError, trio.TooSlowError) as exc:
            log.info("fetching what %s waits for from %s: %s", did, peer, getattr(exc, "reason", "timed out"))
            self.metrics.inc("gmp_fetch_failed")
            return
        for c in got:
            await self.mesh.admission.store_from_peer(c, peer, "fetch")  # comes back through arrived()
        self.metrics.inc("gmp_fetched", len(got))

    async def _react(self, dids: list[str], wait_s: float = 0.0, again: bool = False) -> int:
        """``service.on_admitted`` for containers not reacted to yet (``again``: reacted to or not);
        push what it publishes, waiting up to ``wait_s`` (containers this node wrote itself: their
        reactions are pushed the same way). How many it reacted to."""
        fresh = [d for d in dict.fromkeys(dids) if again or self._reacted.peek(d) is None]
        if not fresh:
            return 0
        now = self.clock()
        result = await self.store.write(lambda db: self.service.on_admitted(db, self.key, now, fresh))
        for d in fresh:  # only once it succeeded: a failed reaction is tried again (check)
            self._reacted.put(d, True)
        published = list(result.get("published", []))
        if published:
            self.metrics.inc("gmp_reactions", len(published))
        for d in published:
            self._reacted.put(d, True)  # our own reaction needs no reaction of ours
        await self.push(result.get("push", []), wait_s=wait_s)
        return len(fresh)

    # --- the periodic check --------------------------------------------------------------

    async def _background(self, what: str, fn) -> None:
        try:
            await fn()
        except MeshnodeError as exc:
            log.info("%s: %s", what, exc.reason)
        except Exception as exc:  # a background task must never take the node down
            log.exception("%s failed", what)
            self.metrics.inc("gmp_errors", where=type(exc).__name__)

    async def _owed_receipts(self) -> list[str]:
        """Make the receipts this node owes and has not made (``q.owed_receipts``): a reaction lost to
        a restart or dropped in a flood is made at start and at each check, never lost for good."""
        owed = await self.store.read(q.owed_receipts, self.key.did, self.clock())
        if owed:
            self.metrics.inc("gmp_receipts_owed", len(owed))
            await self._react(owed, again=True)  # on_admitted makes each receipt once
        return owed

    async def _check_forever(self) -> None:
        while True:
            await trio.sleep(self.settings.check_s)
            await self._background("GMP check", self.check)

    async def check(self) -> dict:
        """Take back stale tasks and offer them again; make the receipts owed; push again what got no
        receipt (offers, versions assigning someone)."""
        now = self.clock()
        liveness = await self.store.read(q.liveness_since)
        grace = int(self.settings.dead_grace_s * 1000)
        result = await self.store.write(lambda db: self.service.reassign_stale(db, self.key, now, liveness=liveness,
                                                                               dead_grace_ms=grace))
        for moved in result.get("reassigned", []):
            self.metrics.inc("gmp_reassigned", why=str(moved.get("why"))[:40])
            log.info("task %s taken back from %s (%s)", moved.get("task"), moved.get("removed"), moved.get("why"))
        await self.push(result.get("push", []), wait_s=0)
        await self._react(_written(result))
        # acceptances of open offers that no version cites yet: a reaction dropped in a flood, or
        # lost to a restart between storing one and reacting to it (on_admitted does each once)
        await self._react(await self.store.read(q.uncited_acceptances, self.key.did, now))
        owed = await self._owed_receipts()
        taken = await self._take_over(now)
        offered = []
        with trio.move_on_after(REOFFER_BUDGET_S):  # slow DHT lookups hold up no other check for long
            offered = await self._offer_again(now)
        decided = await self._offer_decided(now)
        await self._request_decisions(now)
        retried = await self._retry_unreceipted(now)
        return {"reassigned": result.get("reassigned", []), "taken_over": taken, "offered": offered,
                "decided": decided, "retried": retried, "receipts": owed}

    # --- delegation that runs by itself (records.gmp.delegate) --------------------------------------------

    async def _take_over(self, now: int) -> list[dict]:
        """As a steward (gmp.md section 8): take over the overdue tasks whose turn has come; the task
        is then offered again by ``_offer_again`` like any task taken back."""
        result = await self.store.write(lambda db: self.service.take_over(db, self.key, now))
        if result.get("taken"):
            self.metrics.inc("gmp_taken_over", len(result["taken"]))
        await self.push(result.get("push", []), wait_s=0)
        await self._react(_written(result))
        return result.get("taken", [])

    async def _offer_decided(self, now: int) -> list[dict]:
        """Contested tasks this node delegates, offered as their decision says: the best approved
        CogConsensus nominee once ``vote_s`` is over, or the MeshConsensus decision's nominee."""
        vote_ms = int(self.settings.vote_s * 1000)
        picks = await self.store.read(lambda db: self.service.cog_picks(db, self.key.did, now, vote_ms=vote_ms))
        chosen = await self.store.write(lambda db: self.service.cog_choices(
            db, self.key, now, vote_ms=vote_ms, picks=picks)) if picks else []
        chosen = [{"task": c["task"], "basis": c["result"], "candidate": c["candidate"], "rule": "cogconsensus"}
                  for c in chosen]
        chosen += [{**c, "rule": "meshconsensus"} for c in await self.store.read(self.service.mesh_choices,
                                                                                   self.key.did, now)]
        offered = []
        for c in chosen:
            try:
                result = await self.write("task_offer", {"task": c["task"], "basis": c["basis"],
                                                         "expires_s": int(self.settings.offer_s)})
            except MeshnodeError as exc:
                log.info("offering contested task %s: %s", c["task"], exc.reason)
                self.metrics.inc("gmp_decided_offer_failed", code=exc.code)
                continue
            log.info("task %s offered to %s as decided by %s (basis %s)", c["task"], c["candidate"], c["rule"],
                     c["basis"])
            self.metrics.inc("gmp_decided_offers", rule=c["rule"])
            offered.append({"task": c["task"], "to": c["candidate"], "offer": result.get("did"), "rule": c["rule"]})
        return offered

    async def _request_decisions(self, now: int) -> None:
        """As a MeshConsensus validator: request the decisions meshconsensus tasks wait for (gmp.md 6.3
        step 3; the committee decides a value once, a request repeated is not sent again), and judge
        again what waited for a height decided since."""
        consensus = getattr(self.mesh, "consensus", None) if self.mesh is not None else None
        core = getattr(consensus, "core", None)
        if core is None:
            return
        released = await self.store.write(self.service.release_commits)
        await self._react(released)
        if not core.is_validator:
            return
        for value in await self.store.read(self.service.mesh_requests, now):
            try:
                await consensus.consensus_submit(value)
            except MeshnodeError as exc:
                log.info("requesting a delegation decision: %s", exc.reason)

    async def _offer_again(self, now: int) -> list[dict]:
        """Offer each task taken back to the goal's participants (all in one offer, the first to
        accept takes it), else to the best peer its tags find; never to a holder it was taken from.
        A task nobody can take yet is tried again at the next check (and listed by ``task due``;
        past ``reoffer.UNCLAIMED_AFTER_MS`` in the goal owner's inbox)."""
        offered = []
        liveness = None
        for task, removed in await self.store.read(q.taken_back, self.key.did, now, REOFFERS_PER_CHECK):
            if liveness is None:
                liveness = await self.liveness()
            people = await self.store.read(q.goal_people, task)
            found, selection = reoffer.participants_first(self.key.did, people, removed, liveness), "direct"
            if not found:
                tags = await self.store.read(q.task_tags, task)
                found, selection = (await self.candidates(task, tags, exclude=removed))[:1], "interest"
            if not found:
                self.metrics.inc("gmp_no_candidates")
                continue
            try:
                result = await self.write("task_offer", {"task": task, "candidates": found, "selection": selection,
                                                         "expires_s": int(self.settings.offer_s)})
            except MeshnodeError as exc:
                log.info("offering task %s again: %s", task, exc.reason)
                self.metrics.inc("gmp_reoffer_failed", code=exc.code)
                continue
            self.metrics.inc("gmp_reoffered", to="participants" if selection == "direct" else "interest")
            offered.append({"task": task, "to": found, "offer": result.get("did")})
        return offered

    async def _retry_unreceipted(self, now: int) -> list[tuple[str, str]]:
        """Push again, twice at most, what got no receipt within ``receipt_s``: an offer to each
        candidate that answered nothing, and a version assigning someone (with all a newcomer needs)
        to the assignee. (What, to whom) of each push made again."""
        older = now - int(self.settings.receipt_s * 1000)
        offers = await self.store.read(q.unanswered_offers, self.key.did, now, older)
        versions = await self.store.read(q.unreceipted_assignments, self.key.did, older)
        todo = [(offer, candidate, None) for offer, candidate in offers] + versions
        self._retries = {k: n for k, n in self._retries.items() if k in {(d, to) for d, to, _ in todo}}  # answered
        retried = []
        for did, to, lineage in todo:
            tries = self._retries.get((did, to), 0)
            if tries >= RETRIES:
                continue
            self._retries[(did, to)] = tries + 1
            self.metrics.inc("gmp_offer_retries" if lineage is None else "gmp_version_retries")
            dids = [did] if lineage is None else await self.store.read(bundle, lineage, extra=(did,))
            await self.push([{"to": to, "dids": dids}], wait_s=0)
            retried.append((did, to))
        return retried

    async def candidates(self, lineage: str, tags: list[str], exclude=()) -> list[str]:
        """Peers announcing any of ``tags`` as an interest, ranked (``rank_candidates``)."""
        found: set[str] = set()
        for tag in list(dict.fromkeys(tags))[:MAX_TAGS]:
            with trio.move_on_after(LOOKUP_TIMEOUT_S):
                try:
                    found |= {p["did"] for p in await self.mesh.find_interest(tag)}
                except Exception as exc:  # the DHT may have no peers yet: no candidate from this tag
                    log.info("interest lookup %r: %s: %s", tag, type(exc).__name__, exc)
        found -= {self.key.did, *exclude}
        facts = await self.store.read(q.candidate_facts, sorted(found))
        live = {d: self.mesh.liveness.state(d) is Liveness.OK for d in found}
        return rank_candidates(lineage, facts, live, self.settings.min_trust)


def _written(result: dict) -> list[str]:
    """Every container DID a service result says it wrote (its own and those it pushes)."""
    dids = [result["did"]] if isinstance(result.get("did"), str) else []
    dids += [d for d in result.get("published", []) if isinstance(d, str)]
    for p in result.get("push", []):
        dids += [d for d in p.get("dids", []) if isinstance(d, str)]
    return list(dict.fromkeys(dids))

