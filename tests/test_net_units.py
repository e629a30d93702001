"""The network layer's pure parts: bootstrap file, liveness, frames, standing, announce records."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meshnode.base.container import build_container, decode_container
from meshnode.base.identity.keys import NodeKey
from meshnode.net.announce import (
    RecordError,
    announce_addresses,
    interest_key,
    make_announce,
    record_key,
    select_record,
    validate_record,
)
from meshnode.net.bootstrap import parse_bootstrap
from meshnode.net.frames import FrameDecoder, FrameError, encode_frame, encode_varint
from meshnode.net.liveness import Liveness, LivenessTracker, Thresholds
from meshnode.net.standing import PeerLimits, Standing

PEER = "12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN"
T0 = 1_800_000_000_000


def test_bootstrap_reports_bad_lines_with_numbers_and_keeps_good_ones():
    text = "\n".join([
        "# a comment",
        f"/ip4/127.0.0.1/tcp/4001/p2p/{PEER}   # trailing comment",
        "/ip4/127.0.0.1/tcp/4001",
        "not a multiaddr",
        f"/ip4/300.0.0.1/tcp/1/p2p/{PEER}",
        "/ip4/10.0.0.1/tcp/1/p2p/QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N",
        "",
        f"/ip4/127.0.0.1/tcp/4001/p2p/{PEER}",  # duplicate: kept once
        f"/ip6/::1/tcp/4002/p2p/{PEER}",
    ])
    peers, problems = parse_bootstrap(text)
    assert [(p.addr, p.line) for p in peers] == [("/ip4/127.0.0.1/tcp/4001", 2), ("/ip6/::1/tcp/4002", 9)]
    assert peers[0].did == "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"
    assert [p.line for p in problems] == [3, 4, 5, 6]
    assert "p2p" in problems[0].reason and "Ed25519" in problems[3].reason


@given(st.text(max_size=300))
def test_bootstrap_parser_never_raises(text):
    peers, problems = parse_bootstrap(text)
    assert all(p.peer_id.startswith("12D3KooW") for p in peers)


def test_liveness_moves_through_states_and_recovers():
    tracker = LivenessTracker(Thresholds(quiet_ms=100, stale_ms=200, dead_ms=1000))
    assert tracker.heard("a", T0, seq=1).new is Liveness.OK
    assert tracker.tick(T0 + 99) == []
    assert [c.new for c in tracker.tick(T0 + 100)] == [Liveness.QUIET]
    assert [c.new for c in tracker.tick(T0 + 250)] == [Liveness.STALE]
    assert tracker.heard("a", T0 + 260, seq=1) is None  # a replayed heartbeat is no sign of life
    assert [c.new for c in tracker.tick(T0 + 1000)] == [Liveness.DEAD]
    change = tracker.heard("a", T0 + 1001, seq=2)
    assert (change.old, change.new) == (Liveness.DEAD, Liveness.OK)
    assert tracker.state("a") is Liveness.OK


def test_liveness_takes_a_restarted_senders_heartbeats_and_refuses_replays():
    tracker = LivenessTracker(Thresholds(quiet_ms=100, stale_ms=200, dead_ms=1000))
    tracker.heard("a", T0, seq=40, sent_ms=T0)
    tracker.tick(T0 + 300)
    assert tracker.state("a") is Liveness.STALE
    # restarted: seq counts from 1 again, signed later
    assert tracker.freshness("a", 1, T0 + 290) == "new"
    change = tracker.heard("a", T0 + 300, seq=1, sent_ms=T0 + 290)
    assert (change.old, change.new) == (Liveness.STALE, Liveness.OK)
    # the old run's heartbeats replayed: a higher seq, but signed earlier
    assert tracker.freshness("a", 41, T0 + 10) == "older"
    tracker.tick(T0 + 600)
    assert tracker.heard("a", T0 + 600, seq=41, sent_ms=T0 + 10) is None
    assert tracker.state("a") is Liveness.STALE
    assert tracker.freshness("a", 1, T0 + 290) == "duplicate"  # the same heartbeat again
    assert tracker.freshness("a", 2, T0 + 290) == "new"  # two heartbeats in one millisecond


def test_liveness_thresholds_must_grow():
    with pytest.raises(ValueError):
        Thresholds(quiet_ms=10, stale_ms=5, dead_ms=100)
    t = Thresholds.for_interval(1000)
    assert (t.quiet_ms, t.stale_ms, t.dead_ms) == (2500, 6000, 30000)


@given(st.lists(st.binary(max_size=300), max_size=20), st.integers(1, 50))
def test_frames_round_trip_in_any_chunking(bodies, chunk):
    wire = b"".join(encode_frame(b) for b in bodies)
    decoder = FrameDecoder(max_frame=1000)
    out = []
    for i in range(0, len(wire), chunk):
        out += decoder.feed(wire[i: i + chunk])
    assert out == bodies and decoder.pending == 0


def test_frames_refuse_oversize_before_the_body_arrives_and_bad_varints():
    decoder = FrameDecoder(max_frame=100)
    with pytest.raises(FrameError) as info:
        decoder.feed(encode_varint(101))
    assert info.value.code == "frame_too_large"
    with pytest.raises(FrameError):
        FrameDecoder(100).feed(b"\x80\x00")  # non-minimal zero
    with pytest.raises(FrameError):
        FrameDecoder(10**30).feed(b"\xff" * 9)


def test_standing_rate_limit_outstanding_and_cut_off():
    standing = Standing(PeerLimits(messages_per_second=10, burst=5, max_outstanding=2, invalid_threshold=3,
                                   ban_ms=1000))
    assert [standing.allow_message("p", T0) for _ in range(6)] == [True] * 5 + [False]
    assert standing.allow_message("p", T0 + 100)  # refilled one token in 100 ms
    assert standing.begin_request("p", T0) and standing.begin_request("p", T0)
    assert not standing.begin_request("p", T0)
    standing.end_request("p")
    assert standing.begin_request("p", T0)
    assert not standing.record_invalid("p", "bad_signature", T0)
    assert not standing.record_invalid("p", "bad_signature", T0)
    assert standing.record_invalid("p", "non_deterministic", T0)
    assert standing.is_banned("p", T0 + 999) and not standing.is_banned("p", T0 + 1000)
    assert standing.summary("p")["invalid_by_code"] == {"bad_signature": 2, "non_deterministic": 1}


def test_announce_records_validate_and_select():
    a, b = NodeKey(bytes([1]) * 32), NodeKey(bytes([2]) * 32)
    old = make_announce(a, name="a", addresses=["/ip4/127.0.0.1/tcp/1"], now_ms=T0, interests=["AI", " mesh "])
    new = make_announce(a, name="a", addresses=["/ip4/127.0.0.1/tcp/2"], now_ms=T0 + 1)
    revoked = make_announce(a, name="a", addresses=["/ip4/127.0.0.1/tcp/3"], now_ms=T0 - 5, revoke=True)
    key = record_key(a.did)
    assert len(key) < 50  # py-libp2p refuses longer non-multihash FIND_NODE keys
    values = [validate_record(key, c.to_bytes(), T0 + 10) for c in (old, new)]
    assert values[0].payload["interests"] == ["ai", "mesh"]
    assert select_record(values) == 1
    assert announce_addresses(values[1]) == ["/ip4/127.0.0.1/tcp/2"]
    with_revocation = values + [validate_record(key, revoked.to_bytes(), T0 + 10)]
    assert select_record(with_revocation) == 2 and announce_addresses(with_revocation[2]) == []
    with pytest.raises(RecordError) as info:
        validate_record(record_key(b.did), new.to_bytes(), T0 + 10)  # a's announce under b's key
    assert info.value.code == "wrong_key"
    note = build_container(a, "note", {"text": "x", "source": "cli", "audience": "public"}, timestamp_ms=T0)
    with pytest.raises(RecordError) as info:
        validate_record(key, note.to_bytes(), T0 + 10)
    assert info.value.code == "wrong_class"
    tampered = bytearray(new.to_bytes())
    tampered[-3] ^= 1
    with pytest.raises(RecordError):
        validate_record(key, bytes(tampered), T0 + 10)
    assert interest_key("AI") == interest_key(" ai ") != interest_key("mesh")
    assert decode_container(new.to_bytes(), now_ms=T0 + 1).cls == "peer_announce"


def test_announce_addresses_skips_what_cannot_be_dialled():
    """An announce is signed by its sender but its address map is still peer input: only
    multiaddr text whose final /p2p/ names the sender is used (protocols/mesh.md section 2)."""
    a, b = NodeKey(bytes([1]) * 32), NodeKey(bytes([2]) * 32)
    good = [f"/ip4/192.0.2.7/tcp/4001/p2p/{a.peer_id}", "/ip4/192.0.2.7/tcp/4002", "/dns4/node.example/tcp/4001"]
    bad = ["", "garbage", "/ip4/999.1.1.1/tcp/1", f"/ip4/192.0.2.7/tcp/4001/p2p/{b.peer_id}", "/ip4/1.2.3.4/" * 100]
    c = make_announce(a, name="a", addresses=good + bad, now_ms=T0)
    assert announce_addresses(c) == good
    # entries without a text addr (other keys are for later discovery work) are skipped too
    odd = build_container(a, "peer_announce", {"name": "a", "addresses": [{"addr": 7}, {"pow": "x"}, {
        "addr": good[0], "pow": "x"}]}, timestamp_ms=T0)
    assert announce_addresses(odd) == [good[0]]


def test_an_announce_record_must_carry_a_map_payload():
    """A known class with a byte-string payload passes container verification unchecked
    (container.md section 11, step 7); as an announce it would reach code that reads its map."""
    a = NodeKey(bytes([1]) * 32)
    opaque = build_container(a, "peer_announce", b"\x00opaque", timestamp_ms=T0, payload_type="encrypted+cbor")
    with pytest.raises(RecordError) as info:
        validate_record(record_key(a.did), opaque.to_bytes(), T0)
    assert info.value.code == "wrong_class"


def test_mesh_md_examples_are_what_the_code_computes():
    """protocols/mesh.md gives the GossipSub message id and the announce key by example;
    an implementer checks against them, so they must be py-libp2p's and meshnode's values."""
    import json
    import re
    from pathlib import Path

    from libp2p.pubsub.pb import rpc_pb2
    from libp2p.pubsub.pubsub import ContentAddressedMessageIDGenerator

    root = Path(__file__).resolve().parent.parent
    text = (root / "protocols" / "mesh.md").read_text(encoding="utf-8")
    vector = json.loads((root / "protocols" / "vectors" / "containers-valid.json").read_text())["vectors"][0]
    assert vector["description"] == "minimal note"
    ids = ContentAddressedMessageIDGenerator()
    for data, label in ((b"", "empty data gives"), (bytes.fromhex(vector["container"]), '"minimal note", 560 bytes) gives')):
        documented = re.search(re.escape(label) + r"\s+`([^`]+)`", text).group(1)
        assert ids.generate_id(rpc_pb2.Message(data=data)) == documented.encode("ascii")
    assert record_key(NodeKey(bytes(32)).did) in text
