"""A plain libp2p peer: Noise, yamux, identify and ping, none of meshnode's protocols.

    python tests/plain_peer.py MULTIADDR_WITH_P2P

Connects to the node, prints "connected <its peer id>", and stays connected until its stdin is closed.
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

from meshnode.net import libp2p_fixes


async def main(target: str) -> None:
    libp2p_fixes.route_libp2p_logging()
    key_pair = create_new_key_pair()
    host = new_host(key_pair=key_pair, sec_opt={NOISE: Noise(key_pair, noise_privkey=x25519_key_pair().private_key)},
                    muxer_opt={YAMUX: Yamux}, connection_config=ConnectionConfig(max_connections_per_peer=1))
    async with host.run([multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]):
        try:
            with trio.fail_after(20):
                await host.connect(info_from_p2p_addr(multiaddr.Multiaddr(target)))
            print("connected", host.get_id().to_base58(), flush=True)
            await trio.to_thread.run_sync(sys.stdin.read)
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(2):
                await host.close()


if __name__ == "__main__":
    trio.run(main, sys.argv[1])
