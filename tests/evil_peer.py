"""A misbehaving peer for tests: connects to a node and sends it bad input.

    python tests/evil_peer.py MULTIADDR_WITH_P2P GOOD_CONTAINER_HEX [ROUNDS] [--reconnect N] [--gossip HEX]
                              [--seed HEX] [--costly N]

Opens the exchange protocol again and again with: garbage bytes, an oversized
frame, a non-deterministic encoding, a forged container (bit flipped in the
signature), a container with a timestamp far in the future, and the good
container replayed. Prints one line per attempt: "<kind> <outcome>", where
the outcome is the node's answer, or "reset" when it would not talk to us.
With ``--reconnect N`` it then connects N more times and prints "reconnect
closed" when the node closed the connection, "reconnect kept" when it was
still open after 15 s. With ``--costly N`` it first sends N costly frames:
valid CBOR of ~900 KiB that is mostly empty arrays, slow to decode
("costly <outcome>" each). With ``--gossip HEX`` it publishes those bytes on the
containers topic once the node has subscribed, prints "gossip published", and
stays connected until its stdin is closed.
"""

from __future__ import annotations

import sys

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

from meshnode.base.container import build_container, cbor, now_ms
from meshnode.base.identity.keys import NodeKey
from meshnode.net import exchange, libp2p_fixes
from meshnode.net.frames import encode_frame, encode_varint


def costly_frame(size: int = 900 * 1024) -> bytes:
    """A push frame that is valid CBOR but mostly empty arrays: cheap to send, slow to decode."""
    return encode_frame(cbor.encode({"op": "push", "zz": [[] for _ in range(size - 16)]}))


def attempts(good: bytes) -> list[tuple[str, bytes]]:
    forged = bytearray(good)
    forged[len(forged) // 2] ^= 0x01
    future = build_container(NodeKey.generate(), "x_evil", {"n": 1}, timestamp_ms=now_ms() + 3_600_000).to_bytes()
    push = lambda items: encode_frame(exchange.encode_message({"op": "push", "containers": items}))  # noqa: E731
    return [
        ("garbage", b"\xff\x13garbage that is not a frame at all" * 3),
        ("oversized", encode_varint(50 * 1024 * 1024) + b"x" * 100),
        ("non_deterministic", encode_frame(bytes.fromhex("a2626f70647075736862617801"))),
        ("forged", push([bytes(forged)])),
        ("future", push([future])),
        ("replayed", push([good])),
    ]


async def main(target: str, good_hex: str, rounds: int, reconnects: int, gossip: bytes | None,
               seed: bytes | None = None, costly: int = 0) -> None:
    libp2p_fixes.route_libp2p_logging()
    key_pair = create_new_key_pair(seed or NodeKey.generate().seed())
    host = new_host(key_pair=key_pair, sec_opt={NOISE: Noise(key_pair, noise_privkey=x25519_key_pair().private_key)},
                    muxer_opt={YAMUX: Yamux}, connection_config=ConnectionConfig(max_connections_per_peer=1))
    info = info_from_p2p_addr(multiaddr.Multiaddr(target))
    async with host.run([multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]):
        try:
            frame = costly_frame() if costly else b""
            for _ in range(costly):
                print("costly", await one_attempt(host, info, frame), flush=True)
            for _ in range(rounds):
                for kind, payload in attempts(bytes.fromhex(good_hex)):
                    print(kind, await one_attempt(host, info, payload), flush=True)
            for _ in range(reconnects):
                print("reconnect", await reconnect(host, info), flush=True)
            if gossip is not None:
                await publish(host, info, gossip)
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(2):
                await host.close()


async def reconnect(host, info) -> str:
    """Connect again; "closed" once the node closes the connection, "kept" if it is still open after 15 s."""
    host.get_network().unblock_peer(info.peer_id)
    try:
        with trio.fail_after(10):
            await host.connect(info)
    except Exception:
        return "closed"  # refused during the upgrade
    with trio.move_on_after(15):
        while info.peer_id in host.get_connected_peers():
            await trio.sleep(0.05)  # a poll: libp2p has no "connection closed" event to wait on
        return "closed"
    await host.disconnect(info.peer_id)
    return "kept"


async def publish(host, info, data: bytes) -> None:
    """Publish ``data`` on the containers topic once the node has subscribed to it (so it is sent)."""
    from libp2p.pubsub.gossipsub import PROTOCOL_ID_V11, GossipSub
    from libp2p.pubsub.pubsub import ContentAddressedMessageIDGenerator, Pubsub
    from libp2p.tools.anyio_service import background_trio_service

    gossipsub = GossipSub(protocols=[PROTOCOL_ID_V11], degree=6, degree_low=4, degree_high=12,
                          heartbeat_initial_delay=0.1, heartbeat_interval=1)
    pubsub = Pubsub(host, gossipsub, strict_signing=True, msg_id_constructor=ContentAddressedMessageIDGenerator())
    topic = "/meshnode/containers/1"
    try:
        async with background_trio_service(pubsub), background_trio_service(gossipsub):
            await pubsub.wait_until_ready()
            await pubsub.subscribe(topic)
            with trio.fail_after(30):
                await host.connect(info)
                while info.peer_id not in pubsub.peer_topics.get(topic, set()):
                    await trio.sleep(0.05)  # a poll: the node's subscription arrives on its own
                await pubsub.publish(topic, data)
            print("gossip published", flush=True)
            await trio.to_thread.run_sync(sys.stdin.read)  # until the test has seen what it needs
    finally:
        pubsub.seen_messages.stop()


async def one_attempt(host, info, payload: bytes) -> str:
    try:
        with trio.fail_after(5):
            if info.peer_id not in host.get_connected_peers():
                host.get_network().unblock_peer(info.peer_id)
                await host.connect(info)
            stream = await host.new_stream(info.peer_id, [exchange.PROTOCOL_ID])
            await stream.write(payload)
            await stream.close()
            frame = await read_varint_prefixed_bytes_limited(stream, 1 << 20)
    except Exception as exc:  # reset, refused, or dropped: the node would not talk to us
        print(f"  ({type(exc).__name__}: {str(exc)[:120]})", file=sys.stderr, flush=True)
        with trio.move_on_after(2):
            try:  # forget a connection the node may have dropped, so the next attempt dials afresh
                await host.disconnect(info.peer_id)
            except Exception:
                pass
        return "reset"
    message = cbor.decode(frame, max_bytes=1 << 20, max_depth=8)[0]
    if message["op"] == "error":
        return f"error:{message['code']}"
    if message["op"] == "ack":
        if message["rejected"]:
            return f"rejected:{message['rejected'][0]['code']}"
        return "duplicate" if message["duplicates"] else "accepted"
    return message["op"]


def parse_args(argv: list[str]):
    import argparse

    parser = argparse.ArgumentParser(description="send a meshnode node bad input")
    parser.add_argument("target", help="the node's multiaddr, ending in /p2p/<peer id>")
    parser.add_argument("good_hex", help="a valid container (hex), replayed as one of the attempts")
    parser.add_argument("rounds", nargs="?", type=int, default=5, help="rounds of the six attempts")
    parser.add_argument("--reconnect", type=int, default=0, help="connect this many more times afterwards")
    parser.add_argument("--gossip", type=bytes.fromhex, default=None, help="publish these bytes (hex) as gossip")
    parser.add_argument("--costly", type=int, default=0, help="first send this many frames slow to decode")
    parser.add_argument("--seed", type=bytes.fromhex, default=None, help="its key's 32-byte seed (hex): the same "
                        "peer across runs (default: a new key)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    a = parse_args(sys.argv[1:])
    trio.run(main, a.target, a.good_hex, a.rounds, a.reconnect, a.gossip, a.seed, a.costly)
