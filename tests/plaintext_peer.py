"""Try to reach a node with a plaintext-only libp2p host; prints "connected" or "refused"."""

from __future__ import annotations

import sys

import multiaddr
import trio
from libp2p import new_host
from libp2p.crypto.ed25519 import create_new_key_pair
from libp2p.network.config import ConnectionConfig
from libp2p.peer.peerinfo import info_from_p2p_addr
from libp2p.security.insecure.transport import PLAINTEXT_PROTOCOL_ID, InsecureTransport
from libp2p.stream_muxer.yamux.yamux import PROTOCOL_ID as YAMUX, Yamux

from meshnode.net import libp2p_fixes


async def main(target: str) -> None:
    libp2p_fixes.route_libp2p_logging()
    key_pair = create_new_key_pair()
    host = new_host(key_pair=key_pair, sec_opt={PLAINTEXT_PROTOCOL_ID: InsecureTransport(key_pair)},
                    muxer_opt={YAMUX: Yamux}, connection_config=ConnectionConfig(max_connections_per_peer=1))
    async with host.run([multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]):
        try:
            with trio.fail_after(10):
                await host.connect(info_from_p2p_addr(multiaddr.Multiaddr(target)))
            print("connected")
        except Exception as exc:
            print("refused", type(exc).__name__)
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(2):
                await host.close()


if __name__ == "__main__":
    trio.run(main, sys.argv[1])
