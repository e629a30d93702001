"""The exchange protocol's two sides: the ``Exchange`` service.

Client: ``request``/``push``/``fetch``. Server: the stream handler, which
applies the peer's standing (ban, rate, outstanding requests, concurrent
streams per address), charges the frame (its reading, then its parsing) and
every pushed container to the peer's CPU budget before decoding it off the
event loop (``peer_guard``), and counts every invalid input against the peer
by the cost it caused.

Back-pressure on strangers' pushes (issue 36): a stranger's push is decoded
only as far as the strangers' write rate has room for (``AdmissionService.
stranger_room``; at least its first container: a new child's hello comes
alone); the rest is rejected ``busy`` unread, and the ack says when to push
again (``retry_ms``). A stranger that pushes again sooner is refused as soon
as its frame is parsed and, past one push already under way, charged as
invalid input (``retry_hints``): a flood that ignores the hint is cut off
within a few pushes instead of being read and refused at its own pace. This
node's own pushes keep the hints they are given (``push`` refuses locally
until the hint has elapsed).
"""

from __future__ import annotations

import logging
from typing import Awaitable, Callable

import trio

from meshnode.base.container import Container, ContainerError, Limits, decode_container
from meshnode.base.errors import MeshnodeError
from meshnode.base.identity.did import peer_id_to_did
from meshnode.net import exchange, libp2p_fixes
from meshnode.net.addresses import AddressGuard
from meshnode.net.budget import CpuBudgets
from meshnode.net.errors import NetError
from meshnode.net.events import PeerEvents
from meshnode.net.frames import encode_frame, sent
from meshnode.net.paced_read import read_paced_frame
from meshnode.net.peer_guard import PeerGuard, Refused, WorkFailed, remote_host
from meshnode.net.retry_hints import RetryHints
from meshnode.net.standing import Standing
from meshnode.base.container.schema import HELLO_CLASS
from meshnode.store.peers import peer_trust
from meshnode.store.sharing import may_share

log = logging.getLogger("meshnode.net")
REQUEST_TIMEOUT = 10.0
MAX_RETRY_MS = 60_000  # the longest wait a peer's hint makes our pushes to it keep
# A request frame is parsed on the event loop below this size when it holds few CBOR items (at most
# offload.INLINE_ITEMS): its containers are byte strings, not decoded here, so its cost is in its items;
# a push of 16 x 8 KiB (130 KB, 21 items) parsed in 0.06 ms here, less than the thread hop (~0.15 ms)
# it took under a flood, and 256 KiB of byte strings in ~0.5 ms
PARSE_INLINE_BYTES = 256 * 1024
EARLY_PUSH_HOLD_MS = 2000  # the longest a stranger's early push is held before it is answered (retry_hints)


HelloHook = Callable[[Container, str], Awaitable["tuple[str, str] | None"]]


class Exchange:
    """The exchange service: ``request``, ``push``, ``fetch`` and ``ask_validation`` to a peer, and
    ``serve`` (registered by ``register``) for its requests. Streams are opened by the ``gating``
    service (``open_stream``), a peer is reached first by ``reach(did)``; ``validator`` is this node's
    LLM lent to trusted peers (None: none here), ``on_hello`` takes a new child's ``spawn_hello``
    (None: this node takes none). It counts what each peer pushed here and fetched from here while
    it is connected (``moved``, for sync's reports)."""

    def __init__(self, key, store, guard: PeerGuard, standing: Standing, address_guard: AddressGuard,
                 budgets: CpuBudgets, admission, gating, reach: Callable[[str], Awaitable[None]],
                 events: PeerEvents, metrics, clock: Callable[[], int], *, max_frame_bytes: int, min_trust: float,
                 limits: Limits = Limits(), validator=None, on_hello: HelloHook | None = None,
                 retry_hints: RetryHints | None = None):
        self.key, self.store, self.guard, self.standing = key, store, guard, standing
        self.address_guard, self.budgets, self.admission = address_guard, budgets, admission
        self.gating, self.reach, self.metrics, self.clock = gating, reach, metrics, clock
        self.max_frame_bytes, self.min_trust, self.limits = max_frame_bytes, min_trust, limits
        self.validator, self.on_hello = validator, on_hello
        self._validating = trio.Semaphore(1)
        self.retry_hints = retry_hints if retry_hints is not None else RetryHints()  # told to strangers
        self._moved: dict[str, tuple[int, int]] = {}  # DID -> containers it pushed here (new), fetched from here
        self._push_after: dict[str, float] = {}  # DID -> when it told us we may push to it again (trio time)
        events.on_gone(self._forget_moved)

    def register(self, host) -> None:
        host.set_stream_handler(exchange.PROTOCOL_ID, libp2p_fixes.guarded_handler(self.serve, "exchange"))

    def moved(self, did: str) -> tuple[int, int]:
        """What ``did`` pushed here (new containers) and fetched from here on its current connection."""
        return self._moved.get(did, (0, 0))

    def _count_moved(self, did: str, received: int = 0, served: int = 0) -> None:
        r, s = self._moved.get(did, (0, 0))
        self._moved[did] = (r + received, s + served)

    def _forget_moved(self, did: str | None) -> None:
        self._moved.pop(did, None)  # keyed by peer input: kept only while the peer is connected
        self._push_after.pop(did, None)

    # --- the exchange protocol (client) ---------------------------------------

    async def request(self, did: str, message: dict, expected: str, timeout: float = REQUEST_TIMEOUT) -> dict:
        from libp2p.utils.varint import read_varint_prefixed_bytes_limited

        await self.reach(did)
        limit = self.max_frame_bytes
        try:
            with trio.fail_after(timeout):
                stream = await self.gating.open_stream(did, exchange.PROTOCOL_ID)
                try:
                    await stream.write(sent(self.metrics, "exchange", encode_frame(exchange.encode_message(message))))
                    await stream.close()  # half-close: the response still arrives
                    frame = await read_varint_prefixed_bytes_limited(stream, limit)
                except BaseException:
                    await stream.reset()
                    raise
        except (exchange.ExchangeError, NetError):
            raise
        except trio.TooSlowError:
            raise NetError("timeout", f"{did} did not answer within {timeout:.0f} s") from None
        except Exception as exc:
            raise NetError("exchange_failed", f"exchange with {did} failed: {type(exc).__name__}: {exc}") from None
        try:
            message = await self.guard.work(did, None, frame, exchange.decode_message, frame, limit, admit=False)
        except WorkFailed as exc:
            raise exc.error from None
        if expected == "ack":
            self._keep_hint(did, message)
        return exchange.check_response(message, expected)

    def _keep_hint(self, did: str, answer: dict) -> None:
        """``did`` answered a push with a hint (``retry_ms``: refused in whole or part for load):
        no push to it before the hint has elapsed."""
        if type(answer.get("retry_ms")) is int:
            self._push_after[did] = trio.current_time() + min(max(0, answer["retry_ms"]), MAX_RETRY_MS) / 1000

    async def push(self, did: str, containers: list[Container]) -> dict:
        """Push ``containers`` to ``did``; refused here (ExchangeError ``busy``) while the hint of its
        last refusal for load has not elapsed: it would count pushing sooner against us."""
        wait = self._push_after.get(did, 0.0) - trio.current_time()
        if wait > 0:
            self.metrics.inc("push_deferred")
            raise exchange.ExchangeError("busy", f"{did} asked for pushes to wait {wait * 1000:.0f} ms more")
        self._push_after.pop(did, None)
        return await self.request(did, {"op": "push", "containers": [c.to_bytes() for c in containers]}, "ack")

    async def fetch(self, did: str, container_dids: list[str]) -> list[Container]:
        response = await self.request(did, {"op": "fetch", "dids": container_dids}, "found")
        out = []
        for raw in response["containers"]:
            try:
                c = await self.guard.work(did, None, raw, self._decode, raw, admit=False)
            except WorkFailed as exc:
                self.guard.invalid(did, _container_error(exc).code, cost_ms=exc.cost_ms, nbytes=len(raw))
                continue
            if c.did in container_dids:
                out.append(c)
                self.standing.record_valid(did, self.clock())  # evidence for reputation, like a push
        return out

    async def ask_validation(self, did: str, prompt: str, answer: str, timeout: float) -> tuple[int, str]:
        """A peer's verdict on an answer of our cognitive core (its validator LLM's, -3..+3 and a comment)."""
        cut = exchange.MAX_VALIDATE_CHARS
        response = await self.request(did, {"op": "validate", "prompt": prompt[-cut:], "answer": answer[:cut]},
                                      "verdict", timeout=timeout)
        return response["rating"], response["comment"]

    # --- the exchange protocol (server) ---------------------------------------

    async def serve(self, stream) -> None:
        from libp2p.io.exceptions import IncompleteReadError, MessageTooLarge
        from libp2p.network.stream.exceptions import StreamError
        from libp2p.utils.varint import ParseError

        peer_id = stream.muxed_conn.peer_id.to_base58()
        did = peer_id_to_did(peer_id)
        host = None if self.guard.is_known(did) else remote_host(stream.muxed_conn)
        now = self.clock()
        if self.standing.is_banned(did, now):
            self.metrics.inc("exchange_refused", reason="banned")
            await stream.reset()
            return
        if not self.standing.allow_message(did, now):
            self.metrics.inc("exchange_refused", reason="rate_limited")
            await self._respond(stream, exchange.error("rate_limited", "too many requests; slow down"))
            return
        if not self.standing.begin_request(did, now):
            self.metrics.inc("exchange_refused", reason="busy")
            await self._respond(stream, exchange.error("busy", "too many outstanding requests"))
            return
        busy = self.guard.begin_stream(did, host)  # streams of its address, and of all strangers
        if busy is not None:
            self.standing.end_request(did)
            self.metrics.inc("exchange_refused", reason=busy)
            await self._respond(stream, exchange.error("busy", "too many requests from this address at once"
                                                       if busy == "address_busy" else "too many strangers at once"))
            return
        try:
            debt = self.budgets.in_debt(did, host, self.guard.is_known(did), now)
            if debt is not None:  # throttled: its frame is not even read (yamux holds the sender to its window)
                self.metrics.inc("exchange_refused", reason="in_debt")
                await self._respond(stream, exchange.error("over_budget", "over its CPU budget; retry in"
                                                                          f" {debt} ms", debt))
                return
            limit = self.max_frame_bytes
            try:  # its reading charged once its length is known, before its body is read
                frame = await read_paced_frame(stream, limit, REQUEST_TIMEOUT,
                                               before_body=lambda n: self.guard.admit_read(did, host, n))
            except Refused as exc:  # unread: the sender waits on the stream's window until the reset
                self.metrics.inc("exchange_refused", reason="unread")
                await self._respond(stream, exchange.error(exc.code, exc.reason, exc.retry_ms))
                await stream.reset()
                return
            except MessageTooLarge:
                self.guard.invalid(did, "frame_too_large")
                await stream.reset()
                return
            except trio.TooSlowError:  # a frame trickled in too slowly (slow-loris), or a slow link
                self.guard.slow_frame(did)
                await stream.reset()
                return
            except (IncompleteReadError, StreamError, ParseError):  # cut short, or not a varint at all
                self.guard.invalid(did, "bad_frame")
                await stream.reset()
                return
            try:
                op, items = await self.guard.work(did, host, frame, _parse_request, frame, limit,
                                                  inline_bytes=PARSE_INLINE_BYTES)
            except Refused as exc:
                self.metrics.inc("exchange_refused", reason=exc.code)
                await self._respond(stream, exchange.error(exc.code, exc.reason, exc.retry_ms))
                return
            except WorkFailed as exc:
                if not isinstance(exc.error, exchange.ExchangeError):
                    raise exc.error
                self.guard.invalid(did, exc.error.code, cost_ms=exc.cost_ms, nbytes=len(frame))
                await self._respond(stream, exchange.error(exc.error.code, exc.error.reason))
                return
            if op == "push" and not self.guard.is_known(did):  # a stranger's: was it told to wait?
                early = self.retry_hints.early(did, self.clock())
                if early is not None:
                    await self._refuse_early_push(stream, did, *early, nbytes=len(frame))
                    return
            if op == "fetch":
                response = await self._serve_fetch(did, items)
            elif op == "validate":
                response = await self._serve_validate(did, *items)
            else:
                response = await self._serve_push(did, items, host)
            await self._respond(stream, response)
        finally:
            self.standing.end_request(did)
            self.guard.end_stream(did, host)
            await self.guard.save_standing(did)

    async def _serve_fetch(self, requester: str, dids: list[str]) -> dict:
        """Containers by DID, but only those the requester may have: a private note is
        "missing" to everyone, a friends note to everyone it does not name."""
        got, missing = [], []
        for d in dids:
            if not await self.store.read(may_share, d, requester, self.key.did):
                missing.append(d)
                self.metrics.inc("fetch_refused", reason="not_shared")
                continue
            data = await self.store.read(lambda db, d=d: db.get_container_bytes(d))
            if data is None:
                missing.append(d)
            else:
                got.append(data)
        self.metrics.inc("containers_served", len(got))
        self._count_moved(requester, served=len(got))
        return exchange.found(got, missing)

    async def _serve_validate(self, did: str, prompt: str, answer: str) -> dict:
        """Lend this node's validator LLM to a peer's cognitive core: only to peers it trusts
        (``validator.may_ask``), one at a time (an LLM call is expensive), never queued."""
        if self.validator is None:
            return exchange.error("no_validator", "this node has no LLM to validate with")
        if not await self.validator.may_ask(did):
            self.metrics.inc("exchange_refused", reason="untrusted")
            return exchange.error("untrusted", "this node validates only for peers it trusts")
        if self._validating.value == 0:
            self.metrics.inc("exchange_refused", reason="busy")
            return exchange.error("busy", "this node is validating another answer")
        async with self._validating:
            try:
                rating, comment = await self.validator.judge(prompt, answer)
            except MeshnodeError as exc:
                return exchange.error("no_verdict", exc.reason)
        self.metrics.inc("validations_served")
        return exchange.verdict(rating, comment)

    async def _refuse_early_push(self, stream, did: str, wait_ms: int, counted: bool, nbytes: int) -> None:
        """A stranger pushed again before the hint it was given: refused without being decoded. Past the
        one tolerated (a push already under way) it counts as invalid input (``retry_hints``); the one
        tolerated is answered only once the hint has elapsed (at most ``EARLY_PUSH_HOLD_MS``), so that a
        peer pushing one request after another waits as it was told instead of being cut off for it
        (each cut-off identity a new one: their handshakes, and an address whose connection rate bans
        it, honest newcomers there included). Its stream stays counted against its address's and the
        strangers' streams meanwhile."""
        self.metrics.inc("exchange_refused", reason="early_push")
        if counted:
            self.guard.invalid(did, "early_push", weight=self.retry_hints.limits.weight, nbytes=nbytes)
        else:
            await trio.sleep(min(wait_ms, EARLY_PUSH_HOLD_MS) / 1000)  # the hint's time, paced: not a sync
            wait_ms = max(1, wait_ms - EARLY_PUSH_HOLD_MS)
        await self._respond(stream, exchange.error("busy", f"pushed again before the hint; retry in {wait_ms} ms",
                                                   wait_ms))

    async def _serve_push(self, did: str, items: list[bytes], host: str | None = None) -> dict:
        accepted, duplicates, pending, rejected = [], [], [], []
        untrusted = self.min_trust > 0 and await self.store.read(peer_trust, did) < self.min_trust
        if untrusted and len(items) != 1:  # one item may be a new child's hello (no reputation yet): decoded below
            return self._untrusted_push()
        stranger = not self.guard.is_known(did)
        room = self.admission.stranger_room(self.clock()) if stranger else None
        retry_ms = None
        for index, raw in enumerate(items):
            if room is not None and index >= max(1, room[0]):  # no room left: the rest is not even decoded
                retry_ms = self._over_stranger_rate(did, index, len(items), rejected)
                break
            if self.standing.is_banned(did, self.clock()):  # cut off by an earlier item: no more work for it
                self.metrics.inc("exchange_refused", len(items) - index, reason="cut_off")
                rejected.extend({"index": i, "code": "cut_off", "reason": "this peer was cut off for invalid input"}
                                for i in range(index, len(items)))
                break
            try:
                c = await self.guard.work(did, host, raw, self._decode, raw)
            except Refused as exc:  # each container is charged: the rest of the push waits for the budget
                self.metrics.inc("exchange_refused", reason=exc.code)
                rejected.append({"index": index, "code": exc.code, "reason": exc.reason[:200]})
                if stranger:  # a stranger is told when to push again
                    retry_ms = max(retry_ms or 0, exc.retry_ms)
                    self.retry_hints.told(did, retry_ms, self.clock())
                continue
            except WorkFailed as exc:
                error = _container_error(exc)
                self.guard.invalid(did, error.code, cost_ms=exc.cost_ms, nbytes=len(raw))
                rejected.append({"index": index, "code": error.code, "reason": error.reason[:200]})
                continue
            if untrusted and c.cls != HELLO_CLASS:
                return self._untrusted_push()
            if c.cls == HELLO_CLASS:  # a new child's hello (spawn.md 8): answered here, never stored
                refusal = await self._serve_hello(c, did)
                if refusal is None:
                    accepted.append(c.did)
                else:
                    rejected.append({"index": index, "code": refusal[0], "reason": refusal[1][:200]})
                continue
            admission = await self.admission.store_from_peer(c, did, "push")
            if admission.outcome == "invalid":  # GMP admission refused it: counted against the peer already
                rejected.append({"index": index, "code": admission.reason, "reason": admission.detail[:200]})
                continue
            if admission.outcome == "refused":  # the author's quota, no fault of the pushing peer
                rejected.append({"index": index, "code": "quota", "reason": "the author's storage quota is full"})
                continue
            if admission.outcome == "busy":  # strangers over their write rate, or no room to hold it aside: later
                rejected.append(_busy(index))
                if room is not None:
                    retry_ms = self._over_stranger_rate(did, index + 1, len(items), rejected)
                    break
                continue
            new = admission.new
            (accepted if new else pending if admission.outcome == "pending" else duplicates).append(c.did)
            self._count_moved(did, received=int(new))
            self.standing.record_valid(did, self.clock())
            self.metrics.inc("containers_received", via="push")
        return exchange.ack(accepted, duplicates, rejected, retry_ms, pending)

    def _over_stranger_rate(self, did: str, start: int, end: int, rejected: list[dict]) -> int:
        """Items ``start`` to ``end`` of a stranger's push rejected ``busy`` unread (the strangers'
        write rate has no room for them), and the stranger told when to push again; that wait."""
        now = self.clock()
        if end > start:
            self.metrics.inc("containers_refused", end - start, reason="stranger_rate", via="push_unread")
            rejected.extend(_busy(i) for i in range(start, end))
        wait = max(1, self.admission.stranger_room(now)[1])
        self.retry_hints.told(did, wait, now)
        return wait

    def _untrusted_push(self) -> dict:
        self.metrics.inc("exchange_refused", reason="untrusted")
        return exchange.error("untrusted", "this node takes nothing from peers trusted below its sync.min_trust")

    async def _serve_hello(self, hello: Container, did: str) -> tuple[str, str] | None:
        """Hand a ``spawn_hello`` to the node's ``on_hello`` hook (None: accepted, else (code, reason)),
        only from the child itself; counted either way."""
        hook = self.on_hello
        if hello.sender_did != did:
            refusal = ("bad_hello", "a hello is taken only from the child that signed it")
        elif hook is None:
            refusal = ("no_hello", "this node takes no spawn_hello")
        else:
            try:
                refusal = await hook(hello, did)
            except Exception as exc:  # a bug in the hook must not take the exchange down
                log.exception("the spawn_hello hook failed on a hello from %s", did)
                refusal = ("hello_failed", f"{type(exc).__name__}: {exc}")
        if refusal is None:
            self.metrics.inc("spawn_hello_accepted")
        else:
            self.metrics.inc("spawn_hello_refused", reason=refusal[0])
        return refusal

    async def _respond(self, stream, message: dict) -> None:
        await stream.write(sent(self.metrics, "exchange", encode_frame(exchange.encode_message(message))))
        await stream.close()

    def _decode(self, raw: bytes) -> Container:
        """A peer's container, verified (run in the worker pool when large)."""
        return decode_container(raw, now_ms=self.clock(), limits=self.limits)


def _busy(index: int) -> dict:
    return {"index": index, "code": "busy", "reason": "too many unknown authors' containers at once; push again"
            " after retry_ms"}


def _parse_request(frame: bytes, limit: int) -> tuple[str, list]:
    return exchange.parse_request(exchange.decode_message(frame, limit))


def _container_error(failed: WorkFailed) -> ContainerError:
    """Why a container was refused; anything but a ContainerError is a bug and raised as it is."""
    if not isinstance(failed.error, ContainerError):
        raise failed.error
    return failed.error
