"""Heartbeats on a direct stream (/meshnode/heartbeat/2), driven in-process with fake streams (no
libp2p host): what is taken, what is refused and counted against the peer, what is ignored, one
reader per peer, a silent stream ended, and the sender's pace."""

from __future__ import annotations

import trio
import trio.testing

from test_mesh_cost import FakeStream, mesh_for, peer

from meshnode.base.container import build_container, decode_container, now_ms
from meshnode.base.identity.keys import NodeKey
from meshnode.net.errors import NetError
from meshnode.net.frames import FrameDecoder, encode_frame
from meshnode.net.heartbeat_pace import HeartbeatPace
from meshnode.net.heartbeat_stream import FIRST_FRAME_S, MAX_HEARTBEAT_BYTES
from meshnode.net.liveness import Liveness, Thresholds


def beat(key: NodeKey, seq: int, at: int, cls: str = "heartbeat") -> bytes:
    return encode_frame(build_container(key, cls, {"seq": seq, "status": "ok"}, timestamp_ms=at,
                                        ttl_ms=at + 300_000).to_bytes())


async def until(predicate, seconds: float = 10.0) -> None:
    """Wait for ``predicate`` (a store write runs on a worker thread: not a blocked task to trio)."""
    with trio.fail_after(seconds):
        while not predicate():
            await trio.sleep(0.01)


class Clock:
    def __init__(self):
        self.ms = now_ms()

    def __call__(self) -> int:
        return self.ms


def test_the_pace_takes_one_heartbeat_per_gap_and_forgets_a_peer_without_a_stream():
    pace = HeartbeatPace(2500)
    assert pace.allow("a", 0) and not pace.allow("a", 2499) and pace.allow("a", 2500)
    assert pace.allow("b", 2501)  # per peer
    pace.forget("a")
    assert pace.allow("a", 2600) and len(pace) == 2


def test_a_peers_heartbeat_makes_it_ok_and_gives_it_a_row(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path)
        async with store:
            sender = NodeKey.generate()
            stream = FakeStream(beat(sender, 1, now_ms()), peer(sender))
            await mesh.heartbeats.serve(stream)
            assert mesh.metrics.get("heartbeats_received") == 1
            assert mesh.liveness.state(sender.did) is Liveness.OK
            assert mesh.sync._wanted.is_set()
            rows = await store.read(lambda db: db.conn.execute("SELECT id FROM agent_peers").fetchall())
            assert (sender.did,) in rows
            assert not mesh.heartbeats._hearing and not len(mesh.heartbeats.pace)  # the stream ended: nothing kept

    trio.run(main)


def test_oversized_heartbeats_are_refused_before_decoding(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path)
        async with store:
            sender = NodeKey.generate()
            decoded = []
            mesh.heartbeats._take_frame = lambda did, frame: decoded.append(frame)
            junk = b"\x9a\x00\x01\x00\x00" + b"\x80" * 2000  # 65536 empty arrays promised: never decoded
            stream = FakeStream(encode_frame(junk), peer(sender))
            await mesh.heartbeats.serve(stream)
            assert len(junk) > MAX_HEARTBEAT_BYTES and decoded == []
            assert mesh.metrics.get("invalid_from_peer", code="heartbeat_too_large") == 1
            assert stream.was_reset

    trio.run(main)


def test_a_heartbeat_of_another_identity_or_class_is_invalid_and_resets_the_stream(tmp_path):
    """Heartbeats are never relayed: one signed by a third node, arriving on this peer's stream, is
    refused like any other container that is not the peer's own heartbeat."""
    async def main():
        mesh, store = await mesh_for(tmp_path)
        async with store:
            forwarder, origin = NodeKey.generate(), NodeKey.generate()
            for data in (beat(origin, 1, now_ms()), beat(forwarder, 1, now_ms(), cls="x_test"),
                         encode_frame(b"\xa0")):
                stream = FakeStream(data + beat(forwarder, 2, now_ms()), peer(forwarder))
                await mesh.heartbeats.serve(stream)
                assert stream.was_reset
            assert mesh.metrics.get("invalid_from_peer", code="not_own_heartbeat") == 2
            assert mesh.metrics.get("invalid_from_peer") == 3
            assert mesh.metrics.get("heartbeats_received") == 0  # nothing after an invalid frame is read
            assert mesh.liveness.state(origin.did) is None and mesh.liveness.state(forwarder.did) is None
            assert mesh.standing.summary(forwarder.did)["invalid"] == 3

    trio.run(main)


def test_a_replayed_heartbeat_does_not_revive_a_dead_peer_and_a_restarted_one_is_taken_at_once(tmp_path):
    async def main():
        clock = Clock()
        mesh, store = await mesh_for(tmp_path, clock=clock, thresholds=Thresholds(1000, 2000, 3000))
        async with store:
            sender = NodeKey.generate()
            first = beat(sender, 7, clock.ms)
            await mesh.heartbeats.serve(FakeStream(first, peer(sender)))
            clock.ms += 4000
            assert [c.new for c in mesh.liveness.tick(clock.ms)] == [Liveness.DEAD]
            await mesh.heartbeats.serve(FakeStream(first, peer(sender)))  # the same bytes again
            assert mesh.metrics.get("heartbeats_ignored", reason="duplicate") == 1
            assert mesh.liveness.state(sender.did) is Liveness.DEAD
            await mesh.heartbeats.serve(FakeStream(beat(sender, 1, clock.ms), peer(sender)))  # seq from 1
            assert mesh.liveness.state(sender.did) is Liveness.OK
            assert mesh.metrics.get("heartbeats_received") == 2

    trio.run(main)


def test_heartbeats_faster_than_a_quarter_interval_are_ignored_undecoded(tmp_path):
    async def main():
        clock = Clock()
        mesh, store = await mesh_for(tmp_path, clock=clock, heartbeat_ms=10_000)
        async with store:
            sender = NodeKey.generate()
            burst = b"".join(beat(sender, i, clock.ms + i) for i in range(1, 6))
            stream = FakeStream(burst, peer(sender))
            await mesh.heartbeats.serve(stream)
            assert mesh.metrics.get("heartbeats_received") == 1
            assert mesh.metrics.get("heartbeats_ignored", reason="too_often") == 4
            assert mesh.metrics.get("invalid_from_peer") == 0

    trio.run(main)


def test_a_stream_that_sends_nothing_is_ended_after_the_first_frame_time(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path)
        async with store:
            sender = NodeKey.generate()
            stream = FakeStream(b"", peer(sender), hang=True)
            started = trio.current_time()
            await mesh.heartbeats.serve(stream)
            assert trio.current_time() - started >= FIRST_FRAME_S
            assert stream.was_reset and mesh.metrics.get("heartbeat_streams_in", result="silent") == 1
            assert not mesh.heartbeats._hearing

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_between_heartbeats_the_stream_waits_and_a_half_frame_is_cut(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path)
        async with store:
            sender = NodeKey.generate()
            idle = FakeStream(beat(sender, 1, now_ms()), peer(sender), hang=True)
            with trio.move_on_after(3600):  # an hour without a frame: the peer's interval, not ours
                await mesh.heartbeats.serve(idle)
            assert not idle.was_reset and mesh.metrics.get("heartbeat_streams_in", result="silent") == 0
            half = FakeStream(beat(sender, 2, now_ms())[:40], peer(NodeKey.generate()), hang=True)
            await mesh.heartbeats.serve(half)  # a stranger's first frame never ends: slow-loris
            assert half.was_reset and mesh.metrics.get("invalid_from_peer", code="slow_frame") == 1

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_second_stream_of_a_peer_replaces_the_first(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path)
        async with store:
            sender = NodeKey.generate()
            old = FakeStream(beat(sender, 1, now_ms()), peer(sender), hang=True)
            new = FakeStream(beat(sender, 2, now_ms() + 1), peer(sender), hang=True)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(mesh.heartbeats.serve, old)
                await until(lambda: mesh.metrics.get("heartbeats_received") == 1)
                nursery.start_soon(mesh.heartbeats.serve, new)
                await until(lambda: old.was_reset and not new.data)  # the new one read (its beat within
                # the quarter interval of the old one's: ignored as too often, the peer is ok anyway)
                assert mesh.metrics.get("heartbeats_ignored", reason="too_often") == 1
                assert old.was_reset and not new.was_reset
                assert mesh.heartbeats._hearing[sender.did][0] is new and len(mesh.heartbeats._hearing) == 1
                assert mesh.metrics.get("heartbeat_streams_in", result="replaced") == 1
                nursery.cancel_scope.cancel()
            assert not mesh.heartbeats._hearing

    trio.run(main)


class _Conn:
    def __init__(self):
        self.muxed_conn = self
        self.is_closed = False


def test_the_sender_writes_at_once_then_once_per_interval_and_stops_with_its_connection(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path, heartbeat_ms=10_000)
        async with store:
            other = NodeKey.generate()
            stream = FakeStream(b"", peer(other))
            opened = []

            async def open_stream(did, protocol):
                opened.append((did, protocol))
                return stream

            mesh.gating.open_stream = open_stream
            conn = _Conn()
            async with trio.open_nursery() as nursery:
                mesh.heartbeats.start(other.did, conn, nursery)
                mesh.heartbeats.start(other.did, conn, nursery)  # the same connection: one sender
                await trio.sleep(0.001)
                assert mesh.metrics.get("heartbeats_sent") == 1  # at once
                await trio.sleep(35)  # 3 more at 9..11 s each
                assert 4 <= mesh.metrics.get("heartbeats_sent") <= 5
                conn.is_closed = True
            assert opened == [(other.did, "/meshnode/heartbeat/2")] and stream.was_reset
            assert not mesh.heartbeats._beating
            frames = FrameDecoder(MAX_HEARTBEAT_BYTES).feed(stream.out)
            beats = [decode_container(f, now_ms=now_ms()) for f in frames]
            assert {c.cls for c in beats} == {"heartbeat"} and {c.sender_did for c in beats} == {mesh.key.did}
            assert [c.payload["seq"] for c in beats] == list(range(1, len(beats) + 1))

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_a_peer_without_the_protocol_is_counted_and_not_retried_on_that_connection(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path)
        async with store:
            calls = []

            async def open_stream(did, protocol):
                calls.append(did)
                raise NetError("unsupported", f"{did} does not speak {protocol}")

            mesh.gating.open_stream = open_stream
            async with trio.open_nursery() as nursery:
                mesh.heartbeats.start("did:key:zjs", _Conn(), nursery)
            assert calls == ["did:key:zjs"] and not mesh.heartbeats._beating
            assert mesh.metrics.get("heartbeat_streams", result="unsupported") == 1
            assert mesh.metrics.get("heartbeats_sent") == 0

    trio.run(main)


def test_a_new_connection_of_a_peer_stops_the_sender_of_its_old_one(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path)
        async with store:
            other = NodeKey.generate()
            streams = [FakeStream(b"", peer(other)), FakeStream(b"", peer(other))]

            async def open_stream(did, protocol):
                return streams.pop(0) if len(streams) == 2 else streams[0]

            mesh.gating.open_stream = open_stream
            first, second = streams
            async with trio.open_nursery() as nursery:
                mesh.heartbeats.start(other.did, _Conn(), nursery)
                await trio.testing.wait_all_tasks_blocked()
                mesh.heartbeats.start(other.did, _Conn(), nursery)
                await trio.testing.wait_all_tasks_blocked()
                assert first.was_reset and not second.was_reset and len(mesh.heartbeats._beating) == 1
                nursery.cancel_scope.cancel()

    trio.run(main)


class _ResetByPeer(FakeStream):
    async def write(self, data: bytes) -> None:
        raise ConnectionResetError("the peer reset the stream")


def test_a_stream_the_peer_ended_is_opened_again_after_a_pause_that_doubles(tmp_path):
    async def main():
        mesh, store = await mesh_for(tmp_path, heartbeat_ms=10_000)
        async with store:
            other = NodeKey.generate()
            opened_at = []

            async def open_stream(did, protocol):
                opened_at.append(trio.current_time())
                return _ResetByPeer(b"", peer(other))

            mesh.gating.open_stream = open_stream
            conn = _Conn()
            async with trio.open_nursery() as nursery:
                mesh.heartbeats.start(other.did, conn, nursery)
                await until(lambda: len(opened_at) >= 4, seconds=200)
                conn.is_closed = True
                nursery.cancel_scope.cancel()
            gaps = [b - a for a, b in zip(opened_at, opened_at[1:])]
            assert 9 <= gaps[0] <= 11 and 18 <= gaps[1] <= 22 and 36 <= gaps[2] <= 44  # 10 s, doubling, +-10 %
            assert mesh.metrics.get("heartbeat_streams", result="retried") >= 3
            assert mesh.metrics.get("heartbeats_sent") == 0

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


class _Network:
    def __init__(self, conns):
        self.conns = conns

    def get_connections(self, peer_id):
        return list(self.conns)


class _Host:
    def __init__(self, conns):
        self.network = _Network(conns)

    def get_network(self):
        return self.network


def test_heartbeats_go_on_when_the_newer_of_two_connections_closes_and_the_older_stays(tmp_path):
    """Both nodes dialled at once: two connections, the sender started for the one identified last.
    That one closing while the other stays, the peer is still connected and must go on hearing us
    (it stopped: the peer counted this node quiet, then dead, on a live connection)."""
    async def main():
        mesh, store = await mesh_for(tmp_path, heartbeat_ms=10_000)
        async with store:
            other = NodeKey.generate()
            stream = FakeStream(b"", peer(other))

            async def open_stream(did, protocol):
                return stream

            mesh.gating.open_stream = open_stream
            older, newer = _Conn(), _Conn()
            mesh.parts.host = _Host([older, newer])
            async with trio.open_nursery() as nursery:
                mesh.heartbeats.start(other.did, newer, nursery)
                await trio.sleep(0.001)
                assert mesh.metrics.get("heartbeats_sent") == 1
                newer.is_closed = True
                await trio.sleep(35)
                assert mesh.metrics.get("heartbeats_sent") >= 4  # still one per interval
                older.is_closed = True
                await trio.sleep(15)
            assert not mesh.heartbeats._beating

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_the_sender_ends_when_its_peer_disconnects_not_after_its_pause(tmp_path):
    """The sender looked at its connection only between pauses: a peer gone while its stream was being
    retried (up to 5 min) kept a task and its entry that long, per identity that came and went."""
    async def main():
        mesh, store = await mesh_for(tmp_path, heartbeat_ms=10_000)
        async with store:
            other = NodeKey.generate()

            async def open_stream(did, protocol):
                raise NetError("unreachable", "the stream was refused")

            mesh.gating.open_stream = open_stream
            conn = _Conn()
            conn.peer_id = peer(other)
            mesh.parts.host = _Host([])  # the swarm has dropped it: no connection left
            async with trio.open_nursery() as nursery:
                mesh.heartbeats.start(other.did, conn, nursery)
                await trio.sleep(1)  # in its pause before the next try
                conn.is_closed = True
                mesh.gating._on_disconnected(conn)
                await trio.testing.wait_all_tasks_blocked()
                assert not mesh.heartbeats._beating
                nursery.cancel_scope.cancel()

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
