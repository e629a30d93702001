"""The deterministic CBOR layer: one encoding per value, and a decoder that refuses every other."""

from __future__ import annotations

import math
import struct

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshnode.base.container import ContainerError, cbor
from strategies import leaves, values

LIMITS = dict(max_bytes=1 << 20, max_depth=32)


@given(values)
def test_encoding_matches_cbor2_canonical_mode(v):
    # an independent implementation of RFC 8949 4.2.1 ordering and shortest forms
    assert cbor.encode(v) == cbor2.dumps(v, canonical=True)


@given(values)
def test_round_trip(v):
    data = cbor.encode(v)
    decoded, _ = cbor.decode(data, **LIMITS)
    assert decoded == v
    assert cbor.encode(decoded) == data


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_floats_take_their_shortest_form_and_nothing_else_decodes(f):
    data = cbor.encode(f)
    decoded, has_float = cbor.decode(data, **LIMITS)
    assert has_float
    assert (math.isnan(decoded) and math.isnan(f)) or decoded == f
    as_float64 = b"\xfb" + struct.pack(">d", f)
    if as_float64 != data:  # every float that has a shorter form must be refused in the long one
        with pytest.raises(ContainerError) as info:
            cbor.decode(as_float64, **LIMITS)
        assert info.value.code == "non_deterministic"


@given(st.dictionaries(st.text(max_size=8), leaves, min_size=2, max_size=6))
def test_a_map_in_any_other_key_order_is_refused(d):
    canonical = cbor.encode(d)
    reordered = dict(reversed(list(cbor.canonicalize(d)[0].items())))
    data = cbor2.dumps(reordered)  # plain mode keeps insertion order
    if data == canonical:
        return
    with pytest.raises(ContainerError) as info:
        cbor.decode(data, **LIMITS)
    assert info.value.code == "non_deterministic"


@settings(max_examples=3000)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_raise_only_container_error(data):
    try:
        value, _ = cbor.decode(data, **LIMITS)
    except ContainerError as exc:
        assert exc.code and exc.reason
    else:
        assert cbor.encode(value) == data  # anything accepted is the one encoding of its value


@pytest.mark.parametrize(
    "hexdata, code",
    [
        ("1801", "non_deterministic"),  # 1 encoded in two bytes
        ("190001", "non_deterministic"),
        ("5f4101ff", "non_deterministic"),  # indefinite byte string
        ("bf6161 01ff".replace(" ", ""), "non_deterministic"),  # indefinite map
        ("a2616101616102", "duplicate_key"),
        ("a2616202616101", "non_deterministic"),  # b before a
        ("a2626161016162 02".replace(" ", ""), "non_deterministic"),  # longer key first
        ("c11a514b67b0", "forbidden_type"),  # tag 1
        ("c24101", "forbidden_type"),  # bignum tag
        ("d9d9f701", "forbidden_type"),  # self-describe tag
        ("d81c8100", "forbidden_type"),  # shared value
        ("f7", "forbidden_type"),  # undefined
        ("f0", "forbidden_type"),  # simple value 16
        ("f820", "forbidden_type"),  # simple value 32
        ("a1410101", "forbidden_type"),  # byte-string key
        ("a10101", "forbidden_type"),  # integer key
        ("62c328", "malformed_cbor"),  # invalid UTF-8
        ("0000", "malformed_cbor"),  # trailing bytes
        ("", "malformed_cbor"),
        ("9a00000010", "malformed_cbor"),  # claims 16 items, has none
        ("5bffffffffffffffff", "malformed_cbor"),  # absurd length
        # not well-formed (RFC 8949 appendix F): reserved additional information 28..30 in
        # every major type, 31 where no indefinite form exists, simple values 0..31 in two bytes
        *((f"{major << 5 | info:02x}00", "malformed_cbor") for major in range(8) for info in (28, 29, 30)),
        ("81dc00", "malformed_cbor"),  # reserved tag head inside an array
        ("1f", "malformed_cbor"),  # indefinite unsigned integer
        ("3f", "malformed_cbor"),  # indefinite negative integer
        ("df00", "malformed_cbor"),  # indefinite tag
        ("f800", "malformed_cbor"),  # simple value 0 in the two-byte form
        ("f81f", "malformed_cbor"),  # simple value 31 in the two-byte form
        ("ff", "malformed_cbor"),  # break outside an indefinite item
    ],
)
def test_specific_refusals(hexdata, code):
    with pytest.raises(ContainerError) as info:
        cbor.decode(bytes.fromhex(hexdata), **LIMITS)
    assert info.value.code == code, info.value.reason


def test_depth_and_size_limits():
    deep = b"\x81" * 10 + b"\x01"
    assert cbor.decode(deep, max_bytes=100, max_depth=10)[0] == [[[[[[[[[[1]]]]]]]]]]
    with pytest.raises(ContainerError) as info:
        cbor.decode(deep, max_bytes=100, max_depth=9)
    assert info.value.code == "too_deep"
    with pytest.raises(ContainerError) as info:
        cbor.decode(b"\x81" * 100_000 + b"\x01", max_bytes=1 << 20, max_depth=32)
    assert info.value.code == "too_deep"
    with pytest.raises(ContainerError) as info:
        cbor.decode(cbor.encode("x" * 101), max_bytes=100, max_depth=9)
    assert info.value.code == "too_large"


def test_non_ascii_keys_order_by_utf8_bytes():
    d = {"é": 1, "z": 2, "aa": 3}  # "é" is two bytes in UTF-8: sorts with the two-byte keys
    data = cbor.encode(d)
    assert list(cbor2.loads(data)) == ["z", "aa", "é"]
    assert cbor.decode(data, **LIMITS)[0] == d


def test_encode_refuses_what_the_decoder_would_refuse():
    for bad in ({1: "int key"}, {"set": {1, 2}}, 2**64, -(2**64) - 1, object()):
        with pytest.raises(ContainerError) as info:
            cbor.encode(bad)
        assert info.value.code == "forbidden_type"
