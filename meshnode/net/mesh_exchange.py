"""The exchange protocol's two sides: the ``Exchange`` service.

Client: ``request``/``push``/``fetch``. Server: the stream handler, which
applies the peer's standing (ban, rate, outstanding requests, concurrent
streams per address), charges the frame and every pushed container to the
peer's CPU budget before decoding it off the event loop (``peer_guard``), and
counts every invalid input against the peer by the cost it caused.
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
from meshnode.net.frames import encode_frame
from meshnode.net.paced_read import read_paced_frame
from meshnode.net.peer_guard import PeerGuard, Refused, WorkFailed, remote_host
from meshnode.net.standing import Standing
from meshnode.base.container.schema import HELLO_CLASS
from meshnode.store.peers import peer_trust
from meshnode.store.sharing import may_share

log = logging.getLogger("meshnode.net")
REQUEST_TIMEOUT = 10.0


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
                 limits: Limits = Limits(), validator=None, on_hello: HelloHook | None = None):
        self.key, self.store, self.guard, self.standing = key, store, guard, standing
        self.address_guard, self.budgets, self.admission = address_guard, budgets, admission
        self.gating, self.reach, self.metrics, self.clock = gating, reach, metrics, clock
        self.max_frame_bytes, self.min_trust, self.limits = max_frame_bytes, min_trust, limits
        self.validator, self.on_hello = validator, on_hello
        self._validating = trio.Semaphore(1)
        self._moved: dict[str, tuple[int, int]] = {}  # DID -> containers it pushed here (new), fetched from here
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

    # --- the exchange protocol (client) ---------------------------------------

    async def request(self, did: str, message: dict, expected: str, timeout: float = REQUEST_TIMEOUT) -> dict:
        from libp2p.utils.varint import read_varint_prefixed_bytes_limited

        await self.reach(did)
        limit = self.max_frame_bytes
        try:
            with trio.fail_after(timeout):
                stream = await self.gating.open_stream(did, exchange.PROTOCOL_ID)
                try:
                    await stream.write(encode_frame(exchange.encode_message(message)))
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
        return exchange.check_response(message, expected)

    async def push(self, did: str, containers: list[Container]) -> dict:
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
            try:
                frame = await read_paced_frame(stream, limit, REQUEST_TIMEOUT)
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
                op, items = await self.guard.work(did, host, frame, _parse_request, frame, limit)
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

    async def _serve_push(self, did: str, items: list[bytes], host: str | None = None) -> dict:
        accepted, duplicates, rejected = [], [], []
        untrusted = self.min_trust > 0 and await self.store.read(peer_trust, did) < self.min_trust
        if untrusted and len(items) != 1:  # one item may be a new child's hello (no reputation yet): decoded below
            return self._untrusted_push()
        for index, raw in enumerate(items):
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
            if admission.outcome == "busy":  # strangers' containers over their write rate: push again later
                rejected.append({"index": index, "code": "busy", "reason": "too many unknown authors' containers"
                                 " at once; try again later"})
                continue
            new = admission.new
            (accepted if new else duplicates).append(c.did)
            self._count_moved(did, received=int(new))
            self.standing.record_valid(did, self.clock())
            self.metrics.inc("containers_received", via="push")
        return exchange.ack(accepted, duplicates, rejected)

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
        await stream.write(encode_frame(exchange.encode_message(message)))
        await stream.close()

    def _decode(self, raw: bytes) -> Container:
        """A peer's container, verified (run in the worker pool when large)."""
        return decode_container(raw, now_ms=self.clock(), limits=self.limits)


def _parse_request(frame: bytes, limit: int) -> tuple[str, list]:
    return exchange.parse_request(exchange.decode_message(frame, limit))


def _container_error(failed: WorkFailed) -> ContainerError:
    """Why a container was refused; anything but a ContainerError is a bug and raised as it is."""
    if not isinstance(failed.error, ContainerError):
        raise failed.error
    return failed.error
