"""The structural pre-scan (container.prescan) and the item-count limit it enforces.

The scan must count exactly the items the decoder would build, never accept
what the decoder refuses, refuse with the decoder's code for a lone fault, and
stop at the limit: the attack inputs of issue 13 (a 1 MiB exchange frame and a
256 KiB container, both of empty arrays) are refused by count.
"""

from __future__ import annotations

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshnode.base.container import ContainerError, build_container, cbor, decode_container, now_ms
from meshnode.base.container.model import DEFAULT_LIMITS, Limits
from meshnode.base.container.prescan import scan
from meshnode.base.identity.keys import NodeKey
from meshnode.net import exchange
from strategies import values

BIG = 1 << 30


def reference_count(v) -> int:
    """Data items in a decoded value: itself, plus every key and value inside it."""
    if type(v) is list:
        return 1 + sum(map(reference_count, v))
    if type(v) is dict:
        return 1 + sum(reference_count(k) + reference_count(x) for k, x in v.items())
    return 1


def scan_code(data: bytes, max_items: int = BIG, max_depth: int = 64) -> str | int:
    try:
        return scan(data, max_items, max_depth)
    except ContainerError as exc:
        return exc.code


def decode_code(data: bytes, **limits) -> str | object:
    try:
        return cbor.decode(data, max_bytes=1 << 24, **{"max_depth": 64, **limits})[0]
    except ContainerError as exc:
        return exc.code


@settings(max_examples=1500)
@given(values)
def test_the_count_is_the_number_of_items_in_the_value(v):
    data = cbor.encode(v)
    assert scan(data, BIG, 64) == reference_count(v)


@settings(max_examples=1000)
@given(values)
def test_below_the_limit_the_verdict_is_unchanged_and_one_item_less_is_refused(v):
    data = cbor.encode(v)
    n = reference_count(v)
    assert cbor.decode(data, max_bytes=1 << 20, max_depth=64, max_items=n)[0] == cbor.decode(
        data, max_bytes=1 << 20, max_depth=64)[0]
    if n > 1:
        with pytest.raises(ContainerError) as info:
            cbor.decode(data, max_bytes=1 << 20, max_depth=64, max_items=n - 1)
        assert info.value.code == "too_many_items"


@settings(max_examples=3000)
@given(st.binary(max_size=200), st.integers(min_value=1, max_value=40), st.integers(min_value=1, max_value=10))
def test_arbitrary_bytes_give_a_count_or_container_error_and_never_widen_the_decoder(data, max_items, max_depth):
    got = scan_code(data, max_items, max_depth)
    assert type(got) is int or got in ("too_many_items", "too_deep", "malformed_cbor", "non_deterministic",
                                       "forbidden_type")
    if type(got) is int:
        assert got <= max_items
    # with the limit, the decoder accepts nothing it refuses without it
    limited = decode_code(data, max_depth=max_depth, max_items=max_items)
    unlimited = decode_code(data, max_depth=max_depth)
    if type(limited) is not str:
        assert type(unlimited) is not str and cbor.encode(limited) == cbor.encode(unlimited)
    elif limited not in ("too_many_items",):
        assert type(unlimited) is str  # refused either way


@settings(max_examples=1000)
@given(values, st.data())
def test_truncated_input_is_malformed_for_both(v, data):
    encoded = cbor.encode(v)
    if len(encoded) < 2:
        return
    cut = data.draw(st.integers(min_value=1, max_value=len(encoded) - 1))
    truncated = encoded[:cut]
    assert scan_code(truncated) == "malformed_cbor"
    assert decode_code(truncated) == "malformed_cbor"


@pytest.mark.parametrize("hexdata", [
    "9f01ff", "5f4101ff", "7f6161ff", "bf616101ff", "1f", "3f", "df00", "ff", "81ff",
    *(f"{major << 5 | info:02x}00" for major in range(8) for info in (28, 29, 30)),
    "81dc00", "f800", "f81f", "c11a514b67b0", "c24101", "d9d9f701", "d81c8100",
    "9a00000010", "5bffffffffffffffff", "8201", "a1616101a1", "1901",
])
def test_a_lone_fault_gets_the_decoders_code_or_is_left_to_it(hexdata):
    data = bytes.fromhex(hexdata)
    expected = decode_code(data)
    assert type(expected) is str
    got = scan_code(data)
    assert got == expected or type(got) is int, (got, expected)


@pytest.mark.parametrize("tail", [b"\x01", b"\x80", b"\xa0", b"\x81\x01", b"\xa1\x61\x61\x01"])
@pytest.mark.parametrize("arrays", range(6, 12))
def test_depth_edge_matches_the_decoder(arrays, tail):
    data = b"\x81" * arrays + tail
    for max_depth in (8, 9, 10):
        expected = decode_code(data, max_depth=max_depth)
        got = scan_code(data, max_depth=max_depth)
        assert (got == "too_deep") == (expected == "too_deep"), (arrays, tail, max_depth, got, expected)


def test_the_limit_edges():
    data = cbor2.dumps([0] * 99)  # 100 items in 101 bytes
    assert scan(data, 100, 4) == 100
    assert cbor.decode(data, max_bytes=1024, max_depth=4, max_items=100)[0] == [0] * 99
    with pytest.raises(ContainerError) as info:
        cbor.decode(data, max_bytes=1024, max_depth=4, max_items=99)
    assert info.value.code == "too_many_items" and "99" in info.value.reason
    maps = cbor2.dumps({"a": {}, "b": []})  # map, 2 keys, 2 values
    assert scan(maps, 5, 4) == 5
    with pytest.raises(ContainerError):
        scan(maps, 4, 4)


def test_only_the_first_item_is_walked():
    assert scan(b"\x80" + b"\x80" * 100, 1, 4) == 1  # the decoder refuses the trailing bytes
    assert decode_code(b"\x80" * 101, max_items=1) == "malformed_cbor"


def test_a_container_of_empty_arrays_is_refused_by_count():
    data = cbor2.dumps([[]] * 262_139)
    assert len(data) == DEFAULT_LIMITS.max_bytes  # within the size limit: only the count refuses it
    with pytest.raises(ContainerError) as info:
        decode_container(data, now_ms=now_ms())
    assert info.value.code == "too_many_items"


def test_a_1_mib_exchange_frame_of_empty_arrays_is_refused_by_count():
    frame = cbor2.dumps({"op": "push", "zz": [[]] * (1024 * 1024 - 16)})
    assert 1024 * 1024 <= len(frame) < 1024 * 1024 + 16
    with pytest.raises(exchange.ExchangeError) as info:
        exchange.decode_message(frame, 2 * 1024 * 1024)
    assert info.value.code == "bad_message" and "too_many_items" in info.value.reason


def test_the_largest_honest_exchange_message_fits():
    did = "did:hmp:container:uEiA" + "A" * 43
    rejected = [{"index": i, "code": "class_schema", "reason": "x" * 200} for i in range(exchange.MAX_ITEMS)]
    ack = exchange.ack([did] * exchange.MAX_ITEMS, [did] * exchange.MAX_ITEMS, rejected)
    data = exchange.encode_message(ack)
    assert scan(data, BIG, 8) < exchange.MAX_MESSAGE_ITEMS / 2
    assert exchange.decode_message(data, len(data)) == ack


def test_the_builder_refuses_what_the_verifier_would():
    key = NodeKey(bytes(range(32)))
    t = now_ms()
    limits = Limits(max_items=1024)
    build_container(key, "x_items", {"v": [0] * 900}, timestamp_ms=t, limits=limits)
    with pytest.raises(ContainerError) as info:
        build_container(key, "x_items", {"v": [0] * 1100}, timestamp_ms=t, limits=limits)
    assert info.value.code == "too_many_items"
    c = build_container(key, "x_items", {"v": [0] * 1100}, timestamp_ms=t, limits=Limits(max_items=2048))
    with pytest.raises(ContainerError) as info:
        decode_container(c.to_bytes(), now_ms=t, limits=limits)
    assert info.value.code == "too_many_items"


def test_the_largest_container_meshnode_builds_fits_the_default_with_margin():
    """A consensus result over MAX_VOTES votes (cogvote.MAX_VOTES), its votes also in related."""
    from meshnode.domain.consensus.cogvote import MAX_VOTES

    key = NodeKey(bytes(range(32)))
    did = "did:hmp:container:uEiA" + "A" * 43
    votes = [{"vote": did, "voter": key.did, "value": 0.5, "trust": 0.25, "decay": 0.125}] * MAX_VOTES
    payload = {"target_did": did, "decision": "general", "computed_at": "2026-01-01T00:00:00.000Z",
               "rule": {"half_life_ms": 1, "min_voters": 1, "min_trust": 0.5}, "votes": votes,
               "weights": {"approve": 1.5, "reject": 0.5, "neutral": 0.5}, "score": 0.5, "state": "approved",
               "summary_percent": {"approved": 50.5, "rejected": 25.5, "neutral": 24.0}}
    c = build_container(key, "consensus_result", payload, timestamp_ms=now_ms(),
                        related={"in_reply_to": [did], "depends_on": [did] * MAX_VOTES})
    assert scan(c.to_bytes(), BIG, 64) * 2 < DEFAULT_LIMITS.max_items


def test_sync_frames_have_their_own_limits():
    from meshnode.net import mesh_sync
    from meshnode.domain.sync.reconcile import ReconcileError

    assert mesh_sync.MAX_SYNC_FRAME <= 8 * 1024 * 1024
    frame = cbor2.dumps({"ranges": [[]] * (mesh_sync.MAX_SYNC_ITEMS + 1)})
    with pytest.raises(ReconcileError) as info:
        mesh_sync._parse(frame)
    assert "more than" in str(info.value)
    ok = cbor2.dumps({"ranges": [None] * (mesh_sync.MAX_SYNC_ITEMS - 3)})
    assert len(mesh_sync._parse(ok)["ranges"]) == mesh_sync.MAX_SYNC_ITEMS - 3


@pytest.mark.parametrize("text, ok", [("1024", True), ("1048576", True), ("1023", False), ("1048577", False),
                                      ('"many"', False), ("2.5", False)])
def test_the_max_items_setting(tmp_path, text, ok):
    from meshnode.base.config import CONFIG_FILE, DEFAULTS, default_config_text, load_config
    from meshnode.base.errors import ConfigError

    assert DEFAULTS["limits"]["max_items"] == DEFAULT_LIMITS.max_items
    assert f"max_items = {DEFAULT_LIMITS.max_items}" in default_config_text("n")
    (tmp_path / CONFIG_FILE).write_text(f"[limits]\nmax_items = {text}\n", encoding="utf-8")
    if ok:
        assert load_config(tmp_path, environ={}).limits.max_items == int(text)
    else:
        with pytest.raises(ConfigError) as info:
            load_config(tmp_path, environ={})
        assert "limits.max_items" in info.value.reason and "\n" not in info.value.reason


def test_consensus_messages_are_held_to_their_item_limit():
    from meshnode.domain.consensus import messages as cm

    block = cm.blocks.encode_block([b"v"])
    honest = cbor.encode({"t": cm.COMMIT, "c": "committee", "h": 1, "r": 0, "v": cm.block_id_of(block), "p": block,
                          "q": [bytes(100)] * cm.MAX_COMMIT_PRECOMMITS, "s": "did:key:z6Mk", "sig": bytes(64)})
    assert len(cm.decode(honest, check_signature=False).commit) == cm.MAX_COMMIT_PRECOMMITS
    flood = cbor2.dumps({"t": cm.COMMIT, "zz": [[]] * (cm.MAX_MESSAGE - 32)})
    assert len(flood) <= cm.MAX_MESSAGE
    with pytest.raises(cm.MessageError) as info:
        cm.decode(flood, check_signature=False)
    assert "more than" in info.value.reason
