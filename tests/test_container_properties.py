"""Properties of signed containers: round trips, tamper evidence, a decoder that never crashes."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from meshnode.base.container import ContainerError, build_container, decode_container, parse_ms
from meshnode.base.container.model import DEFAULT_LIMITS
from meshnode.base.identity.keys import NodeKey
from strategies import maps, relations, tags

T0 = parse_ms("2026-03-01T00:00:00.000Z")
KEYS = [NodeKey(bytes([i]) * 32) for i in range(1, 4)]

containers = st.builds(
    lambda key, cls, payload, meta, related, tg, dt: build_container(
        key, cls, payload, timestamp_ms=T0 + dt, meta=meta or None, related=related or None, tags=tg or None),
    st.sampled_from(KEYS),
    st.sampled_from(["x_test", "x_other"]),
    maps,
    st.dictionaries(st.sampled_from(["created_by", "sources", "axes"]), st.text(max_size=8), max_size=2),
    relations,
    tags,
    st.integers(0, 10**9),
)


def _decode(data: bytes):
    return decode_container(data, now_ms=T0 + 10**10, limits=DEFAULT_LIMITS)


@given(containers)
def test_round_trip(c):
    data = c.to_bytes()
    d = _decode(data)
    assert d.did == c.did
    assert d.hmp == c.hmp
    assert d.to_bytes() == data
    assert d.core_bytes() == data


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(containers, st.data())
def test_any_single_bit_flip_is_rejected(c, data):
    raw = bytearray(c.to_bytes())
    bit = data.draw(st.integers(0, len(raw) * 8 - 1))
    raw[bit // 8] ^= 1 << (bit % 8)
    with pytest.raises(ContainerError):
        _decode(bytes(raw))


def test_every_single_bit_flip_of_one_container_is_rejected():
    c = build_container(KEYS[0], "note", {"text": "all bits matter", "source": "cli", "audience": "public",
                                          "priority": 1, "topic": "t"},
                        timestamp_ms=T0, meta={"created_by": "AGENT"}, related={"see_also": ["did:x:y"]},
                        tags=["a"], head_extra={"confidence": 0.5})
    raw = c.to_bytes()
    codes = {}
    for bit in range(len(raw) * 8):
        flipped = bytearray(raw)
        flipped[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(ContainerError) as info:
            _decode(bytes(flipped))
        codes[info.value.code] = codes.get(info.value.code, 0) + 1
    assert sum(codes.values()) == len(raw) * 8
    assert {"bad_signature", "did_mismatch", "payload_hash_mismatch"} <= codes.keys()


def _mutate(raw: bytes, rng: random.Random) -> bytes:
    b = bytearray(raw)
    if not b:
        return bytes([rng.randrange(256)])
    op = rng.randrange(6)
    i = rng.randrange(len(b))
    if op == 0:
        b[i] = rng.randrange(256)
    elif op == 1:
        del b[i: i + rng.randrange(1, 8)]
    elif op == 2:
        b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
    elif op == 3:
        b = b[: i]
    elif op == 4:
        j = rng.randrange(len(b))
        b[i:i] = b[j: j + rng.randrange(1, 32)]
    else:
        b[i] = rng.choice([0x00, 0x17, 0x18, 0x1F, 0x5F, 0x7F, 0x9F, 0xBF, 0xC0, 0xF7, 0xFF])
    return bytes(b)


# 2000 mutated inputs as before, 4 of them per generated container: generating and signing a
# container was most of the cost of an example, decoding a mutation is a small part of it
@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
@given(containers, st.lists(st.integers(0, 2**32), min_size=4, max_size=4))
def test_mutated_containers_raise_only_container_error(c, seeds):
    for seed in seeds:
        rng = random.Random(seed)
        raw = c.to_bytes()
        for _ in range(rng.randrange(1, 4)):
            raw = _mutate(raw, rng)
        try:
            d = _decode(raw)
        except ContainerError as exc:
            assert exc.reason
        else:
            # only a mutation that changed nothing signed can pass (a no-op, or new unsigned side data)
            assert d.did == c.did and d.hmp == c.hmp


@settings(max_examples=3000)
@given(st.binary(max_size=600))
def test_arbitrary_bytes_raise_only_container_error(data):
    with pytest.raises(ContainerError) as info:
        _decode(data)
    assert info.value.reason


def test_side_blocks_are_not_signed_but_are_kept():
    c = build_container(KEYS[0], "x_test", {"a": 1}, timestamp_ms=T0,
                        side={"evaluations": {"items": [{"value": 1}]}, "x-unknown": [1, 2]})
    d = _decode(c.to_bytes())
    assert d.side == {"evaluations": {"items": [{"value": 1}]}, "x-unknown": [1, 2]}
    bare = _decode(c.core_bytes())
    assert bare.did == d.did and bare.side == {}


def test_identical_content_has_one_did_and_different_content_another():
    a = build_container(KEYS[0], "x_test", {"a": 1}, timestamp_ms=T0)
    b = build_container(KEYS[0], "x_test", {"a": 1}, timestamp_ms=T0)
    c = build_container(KEYS[0], "x_test", {"a": 2}, timestamp_ms=T0)
    d = build_container(KEYS[1], "x_test", {"a": 1}, timestamp_ms=T0)
    assert a.did == b.did and a.to_bytes() == b.to_bytes()
    assert len({a.did, c.did, d.did}) == 3


def test_clock_skew_and_ttl():
    c = build_container(KEYS[0], "x_test", {"a": 1}, timestamp_ms=T0, ttl_ms=T0 + 1000)
    assert not decode_container(c.to_bytes(), now_ms=T0).expired
    assert decode_container(c.to_bytes(), now_ms=T0 + 1000).expired
    skew = DEFAULT_LIMITS.clock_skew_ms
    decode_container(c.to_bytes(), now_ms=T0 - skew)  # exactly at the allowed skew: accepted
    with pytest.raises(ContainerError) as info:
        decode_container(c.to_bytes(), now_ms=T0 - skew - 1)
    assert info.value.code == "future_timestamp"


def test_builder_refuses_a_payload_its_class_schema_refuses():
    with pytest.raises(ContainerError) as info:
        build_container(KEYS[0], "note", {"text": "no audience", "source": "cli"}, timestamp_ms=T0)
    assert info.value.code == "class_schema"
    with pytest.raises(ContainerError):
        build_container(KEYS[0], "note", {"text": 5, "source": "cli", "audience": "public"}, timestamp_ms=T0)


def test_unknown_blocks_inside_hmp_container_are_signed_and_kept():
    from meshnode.base.container import cbor
    from meshnode.base.container.model import container_did_for

    key = KEYS[0]
    plain = build_container(key, "x_test", {"a": 1}, timestamp_ms=T0)
    hmp = {k: v for k, v in plain.hmp.items()}
    head = {k: v for k, v in hmp["head"].items() if k not in ("signature", "container_did")}
    hmp["head"] = head
    hmp["x_future_block"] = {"b": [1, 2]}
    signed = cbor.encode(hmp)
    hmp["head"] = dict(head, signature=key.sign(signed), container_did=container_did_for(signed))
    data = cbor.encode({"hmp_container": hmp})
    c = _decode(data)
    assert c.hmp["x_future_block"] == {"b": [1, 2]}
    assert c.to_bytes() == data
    tampered = cbor.encode({"hmp_container": dict(c.hmp, x_future_block={"b": [1, 3]})})
    with pytest.raises(ContainerError) as info:
        _decode(tampered)
    assert info.value.code == "bad_signature"
