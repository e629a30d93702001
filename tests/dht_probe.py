"""Ask a node one Kad-DHT FIND_NODE question, as any libp2p peer would.

    python tests/dht_probe.py MULTIADDR_WITH_P2P PEER_ID

Connects (Noise, yamux), sends FIND_NODE with the binary peer id as key, and
prints one line per peer in the answer: "<peer id> <address> <address> ...".
"""

from __future__ import annotations

import sys

import multiaddr
import trio
import varint
from libp2p import new_host
from libp2p.crypto.ed25519 import create_new_key_pair
from libp2p.crypto.x25519 import create_new_key_pair as x25519_key_pair
from libp2p.kad_dht.common import PROTOCOL_ID as KAD
from libp2p.kad_dht.pb.kademlia_pb2 import Message
from libp2p.network.config import ConnectionConfig
from libp2p.peer.id import ID
from libp2p.peer.peerinfo import info_from_p2p_addr
from libp2p.security.noise.transport import PROTOCOL_ID as NOISE, Transport as Noise
from libp2p.stream_muxer.yamux.yamux import PROTOCOL_ID as YAMUX, Yamux
from libp2p.utils.varint import read_varint_prefixed_bytes_limited

from meshnode.net import libp2p_fixes


async def main(target: str, asked: str) -> None:
    libp2p_fixes.route_libp2p_logging()
    key_pair = create_new_key_pair()
    host = new_host(key_pair=key_pair, sec_opt={NOISE: Noise(key_pair, noise_privkey=x25519_key_pair().private_key)},
                    muxer_opt={YAMUX: Yamux}, connection_config=ConnectionConfig(max_connections_per_peer=1))
    info = info_from_p2p_addr(multiaddr.Multiaddr(target))
    async with host.run([multiaddr.Multiaddr("/ip4/127.0.0.1/tcp/0")]):
        try:
            with trio.fail_after(20):
                await host.connect(info)
                stream = await host.new_stream(info.peer_id, [KAD])
                request = Message(type=Message.MessageType.FIND_NODE, key=ID.from_base58(asked).to_bytes())
                data = request.SerializeToString()
                await stream.write(varint.encode(len(data)) + data)
                response = Message()
                response.ParseFromString(await read_varint_prefixed_bytes_limited(stream, 1 << 20))
                await stream.close()
            for peer in response.closerPeers:
                addrs = " ".join(str(multiaddr.Multiaddr(a)) for a in peer.addrs)
                print(f"{ID(peer.id).to_base58()} {addrs}".rstrip(), flush=True)
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(2):
                await host.close()


if __name__ == "__main__":
    trio.run(main, sys.argv[1], sys.argv[2])
