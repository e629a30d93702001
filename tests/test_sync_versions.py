"""Sync versions on the wire: a node serves /meshnode/sync/2.0.0 and, for nodes that predate it,
1.0.0; it opens 2.0.0 and falls back to 1.0.0 when the peer does not speak 2.0.0. Driven in-process
with fake streams (no libp2p host)."""

from __future__ import annotations

import pytest
import trio

from test_mesh_cost import FakeStream, mesh_for, peer

from meshnode.base.container import cbor
from meshnode.base.identity.keys import NodeKey
from meshnode.net.errors import NetError
from meshnode.net.frames import encode_frame
from meshnode.net.mesh_sync import SYNC_PROTOCOL_ID, SYNC_PROTOCOL_V1
from meshnode.domain.sync.selective import EVERYTHING
from meshnode.domain.sync.session import INITIATOR, Session


def test_the_initiator_falls_back_to_1_0_0_for_a_peer_without_2_0_0(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path)
        async with store:
            other = NodeKey.generate()
            opened = []

            async def open_stream(did, protocol):
                opened.append(protocol)
                if protocol == SYNC_PROTOCOL_ID:
                    raise NetError("unsupported", f"{did} does not speak {protocol}")
                return FakeStream(b"", peer(other))

            mesh.sync.gating.open_stream = open_stream
            _, version = await mesh.sync._open_sync_stream(other.did)
            assert (opened, version) == ([SYNC_PROTOCOL_ID, SYNC_PROTOCOL_V1], 1)
            assert mesh.metrics.get("sync_older_format") == 1
            opened.clear()

            async def unreachable(did, protocol):
                opened.append(protocol)
                raise NetError("unreachable", "gone")

            mesh.sync.gating.open_stream = unreachable
            with pytest.raises(NetError):
                await mesh.sync._open_sync_stream(other.did)
            assert opened == [SYNC_PROTOCOL_ID]  # not a version problem: no second try

    trio.run(main)


@pytest.mark.parametrize("version", [1, 2])
def test_each_protocol_is_served_in_its_own_format(tmp_path, version):
    async def main():
        mesh, store = await mesh_for(tmp_path)
        async with store:
            other = NodeKey.generate()
            initiator = Session(INITIATOR, [], EVERYTHING, version=version)
            frames = b"".join(encode_frame(cbor.encode(m)) for m in initiator.start())
            stream = FakeStream(frames, peer(other))
            await (mesh.sync.serve_v1 if version == 1 else mesh.sync.serve)(stream)
            assert not stream.was_reset
            for message in initiator.receive(stream.answer()):  # the responder's answer, in this format
                assert message is not None
            assert initiator.done or version == 1 and initiator.passes == 1

    trio.run(main)


def test_a_frame_of_the_other_format_is_refused_with_a_reason(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path)
        async with store:
            other = NodeKey.generate()
            old = Session(INITIATOR, [], EVERYTHING, version=1).start()
            stream = FakeStream(b"".join(encode_frame(cbor.encode(m)) for m in old), peer(other))
            with pytest.raises(NetError, match="bad_sync: a format 2 message is a map"):
                await mesh.sync.serve(stream)  # 2.0.0 handed a format 1 message (the handler resets)
            assert mesh.metrics.get("invalid_from_peer", code="bad_sync") == 1

    trio.run(main)
