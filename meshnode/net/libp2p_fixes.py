"""Workarounds for measured py-libp2p 0.8.1 behaviour, each small and easy to remove.

Every item names what it works around (see ../shared/LIBP2P-NOTES.md and the
project's probes); a new one comes with a test that fails without it.
Nothing else in meshnode touches libp2p internals.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import re
import socket
import time
from typing import Callable

import trio

log = logging.getLogger("meshnode.net")

PUBSUB_QUEUE_SIZE = 1024


def enlarge_pubsub_queues(size: int = PUBSUB_QUEUE_SIZE) -> None:
    """GossipSub's per-peer outbound RPC queue and per-subscription channel hold 32
    messages and drop the rest silently (a burst of 30 publishes reached peers as 16).
    Neither is a constructor parameter; enlarge both before any Pubsub is made."""
    import libp2p.pubsub.pubsub as pubsub_module
    from libp2p.pubsub.rpc_queue import RpcQueue

    if not isinstance(pubsub_module.RpcQueue, functools.partial):
        pubsub_module.RpcQueue = functools.partial(RpcQueue, max_size=size)
    pubsub_module.SUBSCRIPTION_CHANNEL_SIZE = size


IDONTWANT_BYTES = 1024  # go-libp2p's IDontWantMessageThreshold
_PUBLISHED_BYTES: contextvars.ContextVar[int] = contextvars.ContextVar("published_bytes", default=0)


def idontwant_only_for_large(gossipsub, threshold: int = IDONTWANT_BYTES) -> None:
    """GossipSub 1.2's IDONTWANT saves a peer a large message it already has. py-libp2p 0.8.1 sends
    one (an RPC of its own, carrying the signed peer record) to every mesh peer for every message
    it forwards or publishes, whatever its size: when heartbeats (~570 bytes) were still gossiped, an
    idle mesh cost each node D extra RPCs out and D in per heartbeat heard, more than the heartbeats.
    Send it only for messages of at least ``threshold`` bytes, as go-libp2p does. The size is
    passed in a context variable: ``publish`` calls ``_emit_idontwant_for_message`` in the same
    task. Patches this one GossipSub object (private API, verified against 0.8.1)."""
    publish, emit = gossipsub.publish, gossipsub._emit_idontwant_for_message

    async def publish_sized(msg_forwarder, pubsub_msg) -> None:
        token = _PUBLISHED_BYTES.set(len(pubsub_msg.data))
        try:
            await publish(msg_forwarder, pubsub_msg)
        finally:
            _PUBLISHED_BYTES.reset(token)

    async def emit_if_large(msg_id, topic_ids) -> None:
        if _PUBLISHED_BYTES.get() >= threshold:
            await emit(msg_id, topic_ids)

    gossipsub.publish, gossipsub._emit_idontwant_for_message = publish_sized, emit_if_large


SENDER_RECORDS_KEPT = 4096


def verify_sender_records_once(kept: int = SENDER_RECORDS_KEPT) -> None:
    """Every pubsub RPC carries its sender's signed peer record, and py-libp2p 0.8.1 verifies it
    (an Ed25519 check) on each one, twice for an RPC with control messages (pubsub and gossipsub
    both call ``maybe_consume_signed_record``): the same bytes from the same peer, again and
    again. Verify a peer's record only when its bytes differ from the last ones that passed; the
    same bytes give the same answer. At most ``kept`` peers are remembered. Patches the name in
    both modules once (idempotent)."""
    import libp2p.pubsub.gossipsub as gossipsub_module
    import libp2p.pubsub.pubsub as pubsub_module

    original = pubsub_module.maybe_consume_signed_record
    if getattr(original, "verifies_once", False):
        return
    passed: dict = {}

    def consume_once(msg, host, peer_id) -> bool:
        if not msg.HasField("senderRecord") or passed.get(peer_id) == msg.senderRecord:
            return True
        ok = original(msg, host, peer_id)
        if ok:
            if len(passed) >= kept:
                passed.clear()
            passed[peer_id] = msg.senderRecord
        return ok

    consume_once.verifies_once = True
    pubsub_module.maybe_consume_signed_record = consume_once
    gossipsub_module.maybe_consume_signed_record = consume_once


IDLE_FIXES_ENV = "MESHNODE_IDLE_FIXES"  # "0" switches off cut_idle_cost: bench/idle_cpu.py --ab only


def idle_fixes_on() -> bool:
    """False when the environment switches the idle-cost fixes off (``MESHNODE_IDLE_FIXES=0``)."""
    return os.environ.get(IDLE_FIXES_ENV, "1") != "0"


def cut_idle_cost() -> bool:
    """What an idle mesh costs per peer inside py-libp2p (issue 18), each fix below on its own.
    ``MESHNODE_IDLE_FIXES=0`` leaves them off, so that bench/idle_cpu.py measures before and
    after in one run. Returns whether they are on. Idempotent."""
    if not idle_fixes_on():
        return False
    batch_yamux_window_updates()
    reuse_own_record_bytes()
    return True


def batch_yamux_window_updates() -> None:
    """py-libp2p 0.8.1's yamux gives credit back after every read of a small message: each pubsub
    RPC read sends a WINDOW_UPDATE frame of its own (a Noise encryption, a socket write, a wakeup
    on the other side), one frame back for each frame received on an idle mesh. Its
    ``_auto_tune_and_send_window_update`` has go-yamux's half-window rule as its first branch but
    falls through to per-read credit (``partial slack``, ``release on read``). Keep only
    go-yamux's rule (``sendWindowUpdate``): credit ``target - (window + buffered)`` goes back once
    it reaches half the target window (with py-libp2p's own auto-tuning of the target), so a
    sender is never stopped while half its window is unused. Patches the class once."""
    from libp2p.stream_muxer.yamux.yamux import YamuxStream

    if getattr(YamuxStream._auto_tune_and_send_window_update, "batched", False):
        return

    async def credit_in_batches(self, *, bytes_read: int = 0) -> None:
        async with self.window_lock:
            buffered = len(self.conn.stream_buffers.get(self.stream_id, b""))
            delta = self.target_recv_window - (self.recv_window + buffered)
            if delta <= 0 or delta < self._grow_threshold():
                return
            credit = self._grow_to_delta(buffered) + self._apply_autotune_epoch(buffered)
            self._pending_recv_release = 0
        await self.send_window_update(credit, skip_lock=True)

    credit_in_batches.batched, credit_in_batches.original = True, YamuxStream._auto_tune_and_send_window_update
    YamuxStream._auto_tune_and_send_window_update = credit_in_batches


OWN_RECORD_SECONDS = 5.0
# modules that call env_to_send_in_RPC(host) by the name they imported (py-libp2p 0.8.1)
_OWN_RECORD_USERS = ("libp2p.identity.identify.identify", "libp2p.pubsub.pubsub", "libp2p.pubsub.gossipsub",
                     "libp2p.pubsub.floodsub", "libp2p.kad_dht.kad_dht", "libp2p.kad_dht.peer_routing",
                     "libp2p.kad_dht.provider_store", "libp2p.kad_dht.value_store")


def reuse_own_record_bytes(seconds: float = OWN_RECORD_SECONDS) -> None:
    """Every pubsub RPC (and DHT message) carries the node's own signed peer record, and py-libp2p
    0.8.1 builds it again for each one: ``env_to_send_in_RPC`` calls ``host.get_addrs()`` (new
    Multiaddr objects, the addresses factory: here an interface scan) to see whether the cached
    record is still current, then marshals the envelope again. Keep the bytes per host for
    ``seconds``: an address change reaches peers at most that much later (listen addresses do not
    change while a node runs; the record is re-signed when they do, as before). Patches the name
    where each module imported it (idempotent)."""
    import importlib
    import weakref

    import libp2p.peer.peerstore as peerstore_module

    original = peerstore_module.env_to_send_in_RPC
    if getattr(original, "reuses_bytes", False):
        return
    kept: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # host -> (until, envelope bytes)

    def env_to_send(host) -> tuple[bytes, bool]:
        now = time.monotonic()
        hit = kept.get(host)
        if hit is not None and now < hit[0]:
            return hit[1], False
        envelope, fresh = original(host)
        kept[host] = (now + seconds, envelope)
        return envelope, fresh

    env_to_send.reuses_bytes = True
    peerstore_module.env_to_send_in_RPC = env_to_send
    for name in _OWN_RECORD_USERS:
        module = importlib.import_module(name)
        if getattr(module, "env_to_send_in_RPC", None) is original:
            module.env_to_send_in_RPC = env_to_send


async def prune_equivocation_forever(gossipsub, interval: float = 60.0) -> None:
    """GossipSub.equivocation_detection keeps every forwarded message and is never
    pruned (a slow memory leak); clear it now and then (only detection of
    equivocation on old messages is lost)."""
    while True:
        await trio.sleep(interval)
        gossipsub.equivocation_detection.clear()


def no_fault_of_the_data(result) -> bool:
    """A cached refusal that says nothing about the message: pubsub's validation timed out (its 5 s
    include waiting for one of its 10 validator slots, so a burst times honest messages out) or a
    validator raised. py-libp2p 0.8.1 caches both as invalid, by these error messages."""
    error = getattr(result, "error_message", None) or ""
    return error == "Validation timeout" or error.startswith("Validation error:")


def count_gossip_refused_unseen(pubsub, on_refused, pardoned=None) -> None:
    """Pubsub drops two kinds of message before any topic validator sees them, so their
    forwarder was never counted: one whose id is cached as invalid (the same bad data sent
    again, for the cache's 5 minutes) and one whose signature fails. Report those as
    ``on_refused(forwarder, code)`` with code ``invalid_again`` or ``bad_signature``;
    ``pardoned(msg_id)`` names cached refusals that were no fault of the data (a rate), as do
    ``no_fault_of_the_data`` (a validation timeout, a validator that raised).
    Patches this one Pubsub object (private API, verified against 0.8.1)."""
    import libp2p.pubsub.pubsub as pubsub_module

    original = pubsub.push_msg

    async def push_msg(forwarder, msg) -> None:
        if forwarder != pubsub.host.get_id() and not pubsub._is_msg_seen(msg):
            msg_id = pubsub._msg_id_constructor(msg)
            cached = pubsub.validation_cache.get(msg_id)
            if cached is not None and not cached.is_valid and not no_fault_of_the_data(cached) \
                    and not (pardoned and pardoned(msg_id)):
                on_refused(forwarder, "invalid_again")
            elif pubsub.strict_signing and not pubsub_module.signature_validator(msg):
                on_refused(forwarder, "bad_signature")
        await original(forwarder, msg)

    pubsub.push_msg = push_msg


def forget_ignored(pubsub, was_ignored) -> None:
    """py-libp2p's validators answer only valid or invalid, and pubsub caches an invalid answer by
    message id for 5 minutes: a message meshnode *ignored* for load (its forwarder over budget, the
    worker pool full) would then be refused from every later forwarder, who would be counted for
    it (``invalid_again``). After a message was handled, forget the cached answer when
    ``was_ignored(msg)`` says so, or when it is a refusal that is ``no_fault_of_the_data`` (the next
    forwarder's copy is validated afresh). Patches this one Pubsub object (private API, verified
    against 0.8.1)."""
    original = pubsub.push_msg

    async def push_msg(forwarder, msg) -> None:
        try:
            await original(forwarder, msg)
        finally:
            msg_id = pubsub._msg_id_constructor(msg)
            cached = pubsub.validation_cache.cache.get(msg_id)  # a peek: get() would reorder its LRU list
            if was_ignored(msg) or (cached is not None and not cached.is_valid and no_fault_of_the_data(cached)):
                pubsub.validation_cache._remove(msg_id)

    pubsub.push_msg = push_msg


async def reset_quietly(stream) -> None:
    """Reset a stream that failed, within a second; it may be gone already."""
    with trio.move_on_after(1):
        try:
            await stream.reset()
        except Exception:
            pass


def guarded_handler(serve, name: str):
    """An exception escaping a py-libp2p stream handler tears down the whole host:
    wrap ``serve(stream)`` so any failure resets that one stream and is logged."""

    async def handler(stream) -> None:
        try:
            await serve(stream)
        except Exception as exc:
            log.debug("%s stream ended with %s: %s", name, type(exc).__name__, exc)
            await reset_quietly(stream)

    return handler


def survive_bad_pubsub_rpcs(pubsub, on_bad, serve=None) -> None:
    """py-libp2p 0.8.1's pubsub stream handler catches stream and length-prefix errors, but not an
    RPC that does not parse (``DecodeError``) nor any other error of its read loop: it escapes the
    handler and ends the whole host. One hostile or buggy peer stopped the node this way (a 96 KiB
    publish whose frames interleaved, LIBP2P-NOTES). Serve pubsub streams through a wrapper that
    resets that one stream, forgets the peer's pubsub state as a read error does (py-libp2p opens
    a new stream while the peer stays connected) and, for bytes that do not parse, reports
    ``on_bad(peer_id, "undecodable_rpc")``. ``serve`` is the read loop wrapped (py-libp2p's own
    ``stream_handler`` by default; the Mesh passes ``PubsubGuard.serve``, which charges each frame)."""
    from google.protobuf.message import DecodeError

    serve = serve or pubsub.stream_handler

    async def handler(stream) -> None:
        try:
            await serve(stream)
        except Exception as exc:
            peer_id = stream.muxed_conn.peer_id
            log.debug("pubsub stream from %s ended with %s: %s", peer_id, type(exc).__name__, exc)
            await reset_quietly(stream)
            pubsub._handle_dead_peer(peer_id)
            if isinstance(exc, DecodeError):  # the peer's bytes; any other error may be py-libp2p's own
                on_bad(peer_id, "undecodable_rpc")
            else:
                log.warning("pubsub stream from %s failed: %s: %s", peer_id, type(exc).__name__, exc)

    for protocol in pubsub.router.get_protocols():
        pubsub.host.set_stream_handler(protocol, handler)


# What py-libp2p logs at WARNING or ERROR although it is expected where peers come and go,
# and what meshnode already handles, retries or counts itself: logged at DEBUG instead.
# (logger, regular expression matched at the start of the message): why it is expected.
EXPECTED_LIBP2P_MESSAGES = {
    ("libp2p.host.basic_host", "Failed to open stream to peer"):
        "7 lines per failed stream; the caller gets the exception and handles it",
    ("libp2p.protocol_muxer.multiselect_client", "MultiselectClient handshake: read failed"):
        "the peer went away during protocol negotiation",
    ("libp2p.kad_dht.kad_dht", "Failed to read DHT message from stream"): "a peer closed a DHT stream",
    ("libp2p.kad_dht.peer_routing", "Failed to open stream to"):
        "a DHT lookup asked a peer that is gone or no DHT server (small tables ask every known peer)",
    ("libp2p.kad_dht.peer_routing", "Error searching for peer"): "a find-peer walk failed; the caller reports it",
    ("libp2p.kad_dht.peer_routing", "Received an invalid-signed-record, skipping peer"):
        "an answer carried a peer's older record (after that peer restarted); the newer one is kept",
    ("libp2p.kad_dht.utils", "Failed to update the Certified-Addr-Book"): "the same older record, refused",
    ("libp2p.kad_dht.value_store", "Failed to store value at peer"): "a DHT put reached a peer that is gone",
    ("libp2p.kad_dht.value_store", "Failed to get value from peer"): "a DHT get asked a peer that is gone",
    ("libp2p.kad_dht.provider_store", "Failed to send ADD_PROVIDER to"): "a peer that is gone",
    ("libp2p.kad_dht.provider_store", "Error sending ADD_PROVIDER to"): "a peer that is gone",
    ("libp2p.kad_dht.provider_store", "Failed to get providers from"): "a peer that is gone",
    ("libp2p.kad_dht.provider_store", "Error getting providers from"): "a peer that is gone",
    ("libp2p.kad_dht.provider_store", "Received an invalid-signed-record, skipping provider"):
        "an older record of a restarted peer",
    ("libp2p.network.swarm", r"\[ADDCONN_FAIL\] .*LifecycleError\('Cannot schedule task after service has stopped'\)"):
        "a peer connected while this node was stopping",
    # issue 35 (30 minutes of four nodes with kills and restarts: 18, 1 and 1 of these)
    ("libp2p.kad_dht.kad_dht", "Value not found for key /mn/"):
        "a walk for a peer's announce (/mn/ keys, each node's own, put again every maintenance round) found no"
        " copy: that peer is down and the peers that held it restarted since, or it never joined; the lookup"
        " says so itself (not_found, logged at INFO as `announce lookup for DID`)",
    ("libp2p.kad_dht.kad_dht", "Quorum not met: found"):
        "fewer peers than LOOKUP_QUORUM (3) answered a walk with the record, as when few peers are up; py-libp2p"
        " returns the best record found, which meshnode validates as any other",
    ("libp2p.protocol_muxer.multiselect_client", "MultiselectClient handshake: write failed"):
        "the peer went away during protocol negotiation; the stream's opener gets the error and handles it",
}


def expected_messages_markdown() -> str:
    """EXPECTED_LIBP2P_MESSAGES as the Markdown table protocols/mesh.md shows (a test keeps the two
    equal: ``python -m meshnode.net.libp2p_fixes`` prints it)."""
    rows = ["| logger | the message starts with (a regular expression) | why it is normal |", "|---|---|---|"]
    for (name, pattern), why in EXPECTED_LIBP2P_MESSAGES.items():
        cells = (f"`{name}`", f"`{pattern}`", why)
        rows.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(rows) + "\n"


def route_libp2p_logging(level: int = logging.WARNING) -> None:
    """libp2p's loggers do not propagate (WARNINGs go to bare stderr), and many benign
    events of a changing mesh are logged at WARNING or ERROR: route them all into the
    node's logging, with EXPECTED_LIBP2P_MESSAGES at DEBUG, so that what is left at
    WARNING is something a person should look at. `multiaddr` floods DEBUG."""
    for name, logger in list(logging.root.manager.loggerDict.items()):
        if name.startswith("libp2p") and isinstance(logger, logging.Logger):
            logger.handlers.clear()
            logger.propagate = True
            logger.setLevel(logging.NOTSET)
    logging.getLogger("libp2p").setLevel(level)
    logging.getLogger("multiaddr").setLevel(logging.WARNING)
    # benign connectivity failures are logged at ERROR by the transport: demote them
    logging.getLogger("libp2p.transport.tcp.tcp").setLevel(logging.CRITICAL)
    patterns: dict[str, list[str]] = {}
    for name, pattern in EXPECTED_LIBP2P_MESSAGES:
        patterns.setdefault(name, []).append(f"(?:{pattern})")
    for name, alternatives in patterns.items():
        logger = logging.getLogger(name)
        logger.filters = [f for f in logger.filters if not isinstance(f, _ExpectedToDebug)]
        logger.addFilter(_ExpectedToDebug(re.compile("|".join(alternatives), re.DOTALL)))


class _ExpectedToDebug(logging.Filter):
    """Log a record whose message matches ``expected`` (at its start) at DEBUG, shown only
    when the node logs at debug level."""

    def __init__(self, expected: re.Pattern):
        super().__init__()
        self.expected = expected

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno <= logging.DEBUG or not self.expected.match(record.getMessage()):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger().isEnabledFor(logging.DEBUG)


IDENTIFY_POLL_S = 0.01
IDENTIFY_POLL_MAX_S = 0.25


async def wait_identified(host, peer_id, timeout: float = 5.0, gone: Callable[[], bool] | None = None) -> bool:
    """There is no "identify finished" event; KadDHT.add_peer() is False for an inbound
    peer until identify has stored its addresses. Poll the peerstore: every 10 ms at first
    (identify takes ~10 ms), then less often (up to IDENTIFY_POLL_MAX_S): a swarm's
    connections that never identify would otherwise wake the loop 100 times a second each
    for ``timeout``. ``gone()`` true (the connection closed) ends the wait early, False."""
    from libp2p.peer.peerstore import PeerStoreError

    store = host.get_peerstore()
    pause = IDENTIFY_POLL_S
    with trio.move_on_after(timeout):
        while gone is None or not gone():
            try:
                if identified_protocols(host, peer_id) and store.addrs(peer_id):
                    return True
            except PeerStoreError:
                pass
            await trio.sleep(pause)  # a poll interval: libp2p offers nothing to wait on
            pause = min(pause * 1.5, IDENTIFY_POLL_MAX_S)
    return False


async def wait_closed_connections_gone(network, peer_id, timeout: float) -> None:
    """Until no closed connection to ``peer_id`` is listed any more (up to ``timeout``). py-libp2p
    0.8.1's ``Swarm.new_stream`` dials only when a peer has no listed connection at all: a closed
    one, listed until its close completes, fails the stream with "No valid connections available"
    instead. There is no event for the removal, so this looks every 20 ms."""
    with trio.move_on_after(timeout):
        while any(conn.is_closed for conn in network.get_connections(peer_id)):
            await trio.sleep(0.02)


def identified_protocols(host, peer_id) -> set[str] | None:
    """The protocols a peer listed in identify; None while it has not been identified."""
    from libp2p.peer.peerstore import PeerStoreError

    try:
        protocols = host.get_peerstore().get_protocols(peer_id)
    except PeerStoreError:
        return None
    return {str(p) for p in protocols} if protocols else None


def port_is_free(port: int, host: str = "0.0.0.0") -> bool:
    """The libp2p TCP listener sets SO_REUSEPORT, so a second node on a fixed port starts
    silently and the kernel splits connections between the two. Check first with a
    listener that sets SO_REUSEADDR only (TIME_WAIT leftovers still pass)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            s.listen()
            return True
        except OSError:
            return False


def local_ipv4s() -> list[str]:
    """This host's IPv4 addresses, to announce instead of 0.0.0.0 (stdlib only)."""
    found: list[str] = []
    try:
        import fcntl
        import struct

        for _, name in socket.if_nameindex():
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                try:  # SIOCGIFADDR: the interface's IPv4 address
                    packed = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
                except OSError:
                    continue  # no IPv4 address on this interface
                found.append(socket.inet_ntoa(packed[20:24]))
    except (ImportError, OSError):  # not Linux: loopback only, set [net] announce by hand
        pass
    if "127.0.0.1" not in found:
        found.insert(0, "127.0.0.1")
    return sorted(set(found), key=lambda a: (a.startswith("127."), a))


# ---- scale-gossip ----

def count_gossip_drops(pubsub, gossipsub, count) -> None:
    """py-libp2p 0.8.1 drops gossip in several places with at most a log line (and most at DEBUG):
    a full per-peer send queue (``_handle_dropped_rpc``: the message never leaves), its per-topic
    spam limit, the peer-score publish gate, a full subscription channel (the message is relayed
    but never handed to the application), the IWANT/IHAVE rate limits (a request goes unanswered)
    and a validation that timed out (5 s, including the wait for one of its 10 validator slots).
    Report each as ``count(reason, n)``: meshnode counts them as ``gossip_dropped{reason}``.
    Patches these two objects (private API, verified against 0.8.1); apply it before the other
    push_msg wrappers so that it sees pubsub's cached validation result before they forget it."""
    handle_dropped = gossipsub._handle_dropped_rpc

    def handle_dropped_counted(peer_id, rpc, reason: str) -> None:
        if len(rpc.publish):
            count("send_queue_full" if reason == "queue_full" else reason, len(rpc.publish))
        handle_dropped(peer_id, rpc, reason)

    gossipsub._handle_dropped_rpc = handle_dropped_counted
    _count_when_false(gossipsub, "_check_spam_protection", count, "spam_rate")
    _count_when_false(gossipsub, "_check_iwant_rate_limit", count, "iwant_rate")
    _count_when_false(gossipsub, "_check_ihave_rate_limit", count, "ihave_rate")
    if getattr(gossipsub, "scorer", None) is not None:
        _count_when_false(gossipsub.scorer, "allow_publish", count, "score_gate")
    notify = pubsub.notify_subscriptions

    def notify_counted(msg) -> None:
        for topic in msg.topicIDs:
            channel = pubsub.subscribed_topics_send.get(topic) if topic in pubsub.topic_ids else None
            if channel is not None:
                stats = channel.statistics()
                if stats.current_buffer_used >= stats.max_buffer_size:
                    count("subscription_full", 1)
        notify(msg)

    pubsub.notify_subscriptions = notify_counted
    push_msg = pubsub.push_msg

    async def push_msg_counted(forwarder, msg) -> None:
        seen = pubsub._is_msg_seen(msg)
        msg_id = pubsub._msg_id_constructor(msg)
        # a copy refused from the cache of an earlier timeout is not a new one (counted once per message)
        earlier = pubsub.validation_cache.cache.get(msg_id)  # a peek (get() would move it in the LRU)
        decided = seen or (earlier is not None and time.time() - earlier.timestamp <= pubsub.validation_cache.ttl)
        await push_msg(forwarder, msg)
        if not decided and not pubsub._is_msg_seen(msg):
            cached = pubsub.validation_cache.cache.get(msg_id)  # a peek
            if cached is not None and not cached.is_valid and cached.error_message == "Validation timeout":
                count("validation_timeout", 1)

    pubsub.push_msg = push_msg_counted


def _count_when_false(obj, name: str, count, reason: str) -> None:
    check = getattr(obj, name, None)
    if check is None:
        return

    def counted(*args, **kwargs):
        ok = check(*args, **kwargs)
        if not ok:
            count(reason, 1)
        return ok

    setattr(obj, name, counted)

# ---- gossip-latency ----

def one_validation_per_message(pubsub) -> None:
    """py-libp2p 0.8.1 marks a message seen only once its validators have returned (go-libp2p marks
    it before validating): every copy that arrives from another mesh peer while the first is being
    validated is validated too, and each copy that passes is handed to the subscription again and
    forwarded to every mesh peer again. In a burst on a busy machine validation takes tens of ms and
    several copies of each message arrive meanwhile: the extra validations also hold pubsub's 10
    validator slots, the extra relays multiply the traffic, and every node's latency grows with it.
    A copy now waits until the push of the first one is over, then goes its way as if it had
    arrived then: dropped as seen when valid, refused from the cache when invalid, validated
    afresh when the first was ignored for load (``forget_ignored``). Apply it after the other
    push_msg wrappers (outermost). Patches this one Pubsub object (private API, verified against 0.8.1)."""
    original = pubsub.push_msg
    in_flight: dict[bytes, trio.Event] = {}

    async def push_msg(forwarder, msg) -> None:
        msg_id = pubsub._msg_id_constructor(msg)
        while (first := in_flight.get(msg_id)) is not None:
            await first.wait()
        if pubsub._is_msg_seen(msg):  # what the original does first (after its blacklist checks)
            return
        done = in_flight[msg_id] = trio.Event()
        try:
            await original(forwarder, msg)
        finally:
            del in_flight[msg_id]
            done.set()

    pubsub.push_msg = push_msg


def validation_errors_without_the_message(pubsub) -> None:
    """py-libp2p 0.8.1's ``validate_msg`` raises ``ValidationError(f"... msg={msg}")`` for every
    message its validators refuse: protobuf's text format of the whole message, every byte of
    its data escaped, made on the event loop while it holds the interpreter lock, for an error
    that only a debug log line reads (measured: 99 ms for a 900 KB message, 4.6 ms for 40 KB).
    A swarm sending invalid gossip made each refusal cost more than the message itself, and every
    other task (the person's ``status`` among them) waited through it. The same validation,
    with errors naming the message by its id. Patches this one Pubsub object (private API,
    verified against 0.8.1: the cache, sync validators first, then async ones in a nursery with
    pubsub's timeout and semaphore)."""
    from libp2p.pubsub.pubsub import ValidationError, ValidationResult

    async def validate_msg(forwarder, msg) -> None:
        msg_id = pubsub._msg_id_constructor(msg)
        name = f"message {bytes(msg_id)[:16].hex()}"
        cached = pubsub.validation_cache.get(msg_id)
        if cached is not None:
            if not cached.is_valid:
                raise ValidationError(f"cached validation failed for {name}: {cached.error_message or 'unknown error'}")
            return
        validators = pubsub.get_msg_validators(msg)
        error = None
        try:
            for v in validators:
                if not v.is_async and not v.validator(forwarder, msg):
                    error = "Synchronous validation failed"
                    raise ValidationError(f"validation failed for {name}")
            asynchronous = [v.validator for v in validators if v.is_async]
            if asynchronous:
                try:
                    with trio.move_on_after(pubsub.validation_timeout) as scope:
                        results: list[bool] = []
                        async with trio.open_nursery() as nursery:
                            for validator in asynchronous:
                                nursery.start_soon(pubsub._run_async_validator, validator, forwarder, msg, results)
                        if not all(results):
                            error = "Asynchronous validation failed"
                            raise ValidationError(f"validation failed for {name}")
                    if scope.cancelled_caught:
                        error = "Validation timeout"
                        raise ValidationError(f"validation timeout for {name}")
                except ValidationError:
                    raise
                except Exception as exc:
                    error = f"Validation error: {exc}"
                    raise ValidationError(f"validation error for {name}: {exc}") from exc
            pubsub.validation_cache.put(msg_id, ValidationResult(is_valid=True, timestamp=time.time()))
        except ValidationError:
            pubsub.validation_cache.put(msg_id, ValidationResult(is_valid=False, timestamp=time.time(),
                                                                 error_message=error))
            raise

    pubsub.validate_msg = validate_msg


_VERIFIED: contextvars.ContextVar = contextvars.ContextVar("pubsub_signature_verified", default=None)


def verify_signatures_once() -> None:
    """``count_gossip_refused_unseen`` checks an unseen message's signature to count a bad one, and
    pubsub's push_msg checks it again (Ed25519, plus decoding the key and peer id) for every copy
    not yet seen. Remember, per task, the message object whose signature passed last, so the
    second check in the same push is free. Replaces the module function push_msg calls (idempotent)."""
    import libp2p.pubsub.pubsub as pubsub_module

    check = pubsub_module.signature_validator
    if getattr(check, "remembers", False):
        return

    def signature_validator(msg) -> bool:
        if _VERIFIED.get() is msg:
            return True
        ok = check(msg)
        if ok:
            _VERIFIED.set(msg)
        return ok

    signature_validator.remembers = True
    pubsub_module.signature_validator = signature_validator


if __name__ == "__main__":
    print(expected_messages_markdown(), end="")
