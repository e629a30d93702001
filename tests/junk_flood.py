"""Junk from throw-away keys, for tests and memory measurements: valid containers a node may not want.

    python tests/junk_flood.py MULTIADDR_WITH_P2P [--authors N] [--per-author M] [--bytes B] [--gossip]
                               [--batch K]

Makes N fresh author keys, each signing M public notes of about B bytes of
text, and pushes them to the node over the exchange protocol in batches of K
(one stream per batch, each from a fresh peer identity every 8 batches, as a
flooder with free identities would). With ``--gossip`` every container is
also published on the containers topic. The last line of output is one JSON
object: what was sent, and what the node's acks said (accepted, duplicates,
rejected by code).
"""

from __future__ import annotations

import argparse
import json
import sys
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

from meshnode.base.container import cbor, now_ms
from meshnode.base.identity.keys import NodeKey
from meshnode.net import exchange, libp2p_fixes
from meshnode.net.frames import encode_frame
from meshnode.domain.notes import make_note

TOPIC = "/meshnode/containers/1"


def junk(authors: int, per_author: int, size: int) -> list:
    out, t = [], now_ms()
    for _ in range(authors):
        key = NodeKey.generate()
        for i in range(per_author):
            text = (f"junk {i} " * (size // 6 + 1))[:size]
            out.append(make_note(key, text, now_ms=t + i, audience="public"))
    return out


def _host():
    key_pair = create_new_key_pair(NodeKey.generate().seed())
    return new_host(key_pair=key_pair, sec_opt={NOISE: Noise(key_pair, noise_privkey=x25519_key_pair().private_key)},
                    muxer_opt={YAMUX: Yamux}, connection_config=ConnectionConfig(max_connections_per_peer=1))


async def push_batch(host, info, batch: list, tally: Counter) -> None:
    try:
        with trio.fail_after(20):
            if info.peer_id not in host.get_connected_peers():
                await host.connect(info)
            stream = await host.new_stream(info.peer_id, [exchange.PROTOCOL_ID])
            await stream.write(encode_frame(exchange.encode_message(
                {"op": "push", "containers": [c.to_bytes() for c in batch]})))
            await stream.close()
            frame = await read_varint_prefixed_bytes_limited(stream, 1 << 22)
    except Exception as exc:
        tally[f"failed:{type(exc).__name__}"] += len(batch)
        return
    message = cbor.decode(frame, max_bytes=1 << 22, max_depth=8)[0]
    if message["op"] != "ack":
        tally[f"error:{message.get('code')}"] += len(batch)
        return
    tally["accepted"] += len(message["accepted"])
    tally["duplicates"] += len(message["duplicates"])
    for r in message["rejected"]:
        tally[f"rejected:{r['code']}"] += 1


async def gossip_all(target: str, items: list, tally: Counter) -> None:
    from libp2p.pubsub.gossipsub import PROTOCOL_ID_V11, GossipSub
    from libp2p.pubsub.pubsub import ContentAddressedMessageIDGenerator, Pubsub
    from libp2p.tools.anyio_service import background_trio_service

    host = _host()
    info = info_from_p2p_addr(multiaddr.Multiaddr(target))
    gossipsub = GossipSub(protocols=[PROTOCOL_ID_V11], degree=6, degree_low=4, degree_high=12,
                          heartbeat_initial_delay=0.1, heartbeat_interval=1,
                          spam_protection_enabled=False)  # its default (10/s) would throttle the flood itself
    pubsub = Pubsub(host, gossipsub, strict_signing=True, msg_id_constructor=ContentAddressedMessageIDGenerator())
    async with host.run([multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]):
        try:
            async with background_trio_service(pubsub), background_trio_service(gossipsub):
                await pubsub.wait_until_ready()
                await pubsub.subscribe(TOPIC)
                with trio.fail_after(30):
                    await host.connect(info)
                    while info.peer_id not in pubsub.peer_topics.get(TOPIC, set()):
                        await trio.sleep(0.05)  # a poll: the node's subscription arrives on its own
                for c in items:
                    await pubsub.publish(TOPIC, c.to_bytes())
                    tally["gossiped"] += 1
                    await trio.sleep(0)
                await trio.sleep(2)  # let the last messages leave before closing
        finally:
            pubsub.seen_messages.stop()
            with trio.CancelScope(shield=True), trio.move_on_after(2):
                await host.close()


async def main(args) -> None:
    libp2p_fixes.route_libp2p_logging()
    items = junk(args.authors, args.per_author, args.bytes)
    tally: Counter = Counter(sent=len(items), bytes=sum(len(c.to_bytes()) for c in items))
    info = info_from_p2p_addr(multiaddr.Multiaddr(args.target))
    batches = [items[i: i + args.batch] for i in range(0, len(items), args.batch)]
    for start in range(0, len(batches), 8):  # a fresh identity every 8 batches
        host = _host()
        async with host.run([multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]):
            try:
                for batch in batches[start: start + 8]:
                    await push_batch(host, info, batch, tally)
            finally:
                with trio.CancelScope(shield=True), trio.move_on_after(2):
                    await host.close()
    if args.gossip:
        await gossip_all(args.target, junk(args.authors, args.per_author, args.bytes), tally)
    print(json.dumps(dict(sorted(tally.items()))), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("target")
    parser.add_argument("--authors", type=int, default=20)
    parser.add_argument("--per-author", type=int, default=50)
    parser.add_argument("--bytes", type=int, default=8000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--gossip", action="store_true")
    trio.run(main, parser.parse_args())
    sys.exit(0)
