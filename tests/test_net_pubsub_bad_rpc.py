"""An RPC that does not parse ends that pubsub stream, not the node (libp2p_fixes.survive_bad_pubsub_rpcs):
py-libp2p 0.8.1 let protobuf's DecodeError escape its stream handler, which stopped the whole host."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest
import trio

from meshnode.net import libp2p_fixes
from pubsub_streams import FramesStream


class OneRpcStream(FramesStream):
    """A pubsub stream that carries one length-prefixed ``body`` and then ends."""

    def __init__(self, peer_id, body: bytes):
        super().__init__(peer_id, [body])


@pytest.fixture
def pubsub():
    from libp2p import new_host
    from libp2p.crypto.ed25519 import create_new_key_pair
    from libp2p.pubsub.gossipsub import PROTOCOL_ID, GossipSub
    from libp2p.pubsub.pubsub import Pubsub

    gossipsub = GossipSub(protocols=[PROTOCOL_ID], degree=6, degree_low=4, degree_high=12)
    pubsub = Pubsub(new_host(key_pair=create_new_key_pair()), gossipsub)
    pubsub._manager = SimpleNamespace(is_running=True)  # the read loop runs while its service does
    yield pubsub
    pubsub.seen_messages.stop()


def served_handler(pubsub, protocol):
    return pubsub.host.get_mux().handlers[protocol]


def a_peer():
    from libp2p.peer.id import ID

    return ID(b"\x00\x25" + bytes([7]) * 37)


UNPARSEABLE = b"\x0a\xff\xff\xff\xff\x0f" + bytes(40)  # field 1 claims far more bytes than follow


async def test_an_unparseable_rpc_resets_its_stream_and_is_reported(pubsub):
    from libp2p.pubsub.gossipsub import PROTOCOL_ID

    reported = []
    libp2p_fixes.survive_bad_pubsub_rpcs(pubsub, lambda peer, reason: reported.append((peer, reason)))
    stream = OneRpcStream(a_peer(), UNPARSEABLE)
    with trio.fail_after(5):
        await served_handler(pubsub, PROTOCOL_ID)(stream)  # returns: nothing escapes to the host
    assert reported == [(a_peer(), "undecodable_rpc")] and stream.resets == 1


async def test_without_the_fix_the_error_escapes_the_handler(pubsub):
    """What the fix is for: the same bytes raise out of py-libp2p's own handler (fails on an upgrade
    that handles them, the cue to drop the wrapper)."""
    from google.protobuf.message import DecodeError
    from libp2p.pubsub.gossipsub import PROTOCOL_ID

    with pytest.raises(DecodeError):
        await served_handler(pubsub, PROTOCOL_ID)(OneRpcStream(a_peer(), UNPARSEABLE))


async def test_a_stream_that_ends_cleanly_is_not_reported(pubsub):
    from libp2p.pubsub.gossipsub import PROTOCOL_ID

    reported = []
    libp2p_fixes.survive_bad_pubsub_rpcs(pubsub, lambda peer, reason: reported.append((peer, reason)))
    stream = OneRpcStream(a_peer(), b"")  # an empty RPC parses; then the stream ends
    with trio.fail_after(5):
        await served_handler(pubsub, PROTOCOL_ID)(stream)
    assert reported == []


def test_the_handler_is_registered_per_router_protocol():
    from libp2p.pubsub.pubsub import Pubsub

    assert "self.host.set_stream_handler(protocol, self.stream_handler)" in inspect.getsource(Pubsub.__init__)


async def test_an_error_of_py_libp2p_s_own_is_not_charged_to_the_peer(pubsub):
    """Only bytes that do not parse are the peer's doing; any other escaping error resets the
    stream and is logged, with no charge."""
    from libp2p.pubsub.gossipsub import PROTOCOL_ID

    class Broken(OneRpcStream):
        async def read(self, n: int = -1) -> bytes:
            raise RuntimeError("a bug on our side")

    reported = []
    libp2p_fixes.survive_bad_pubsub_rpcs(pubsub, lambda peer, reason: reported.append((peer, reason)))
    stream = Broken(a_peer(), b"")
    with trio.fail_after(5):
        await served_handler(pubsub, PROTOCOL_ID)(stream)
    assert reported == [] and stream.resets == 1
