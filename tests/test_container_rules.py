"""Head rules, error codes, and the builder refusing what the verifier refuses."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from meshnode.base.container import ContainerError, Limits, build_container, cbor, decode_container, parse_ms
from meshnode.base.container.model import container_did_for
from meshnode.base.identity.keys import NodeKey

T0 = parse_ms("2026-03-01T00:00:00.000Z")
KEY = NodeKey(bytes([7]) * 32)
NOTE = {"text": "x", "source": "cli", "audience": "public"}


def signed_with(head_changes: dict, payload=NOTE, drop=()) -> bytes:
    """A container signed correctly, with head fields changed before signing."""
    c = build_container(KEY, "note", NOTE, timestamp_ms=T0)
    head = {k: v for k, v in c.head.items() if k not in ("signature", "container_did") and k not in drop}
    head.update(head_changes)
    hmp = dict(c.hmp, head=head, payload=payload)
    signed = cbor.encode(hmp)
    hmp["head"] = dict(head, signature=KEY.sign(signed), container_did=container_did_for(signed))
    return cbor.encode({"hmp_container": hmp})


def code_of(data: bytes) -> str:
    with pytest.raises(ContainerError) as info:
        decode_container(data, now_ms=T0)
    return info.value.code


@pytest.mark.parametrize(
    "changes, code",
    [
        ({"timestamp": "٢٠٢٦-03-01T00:00:00.000Z"}, "bad_field"),  # Arabic-Indic digits
        ({"class_version": "١.٠", "class_id": "note_v١.٠"}, "bad_field"),
        ({"payload_type": "encrypted"}, "bad_field"),
        ({"payload_type": "encryptedXYZ"}, "bad_field"),
        ({"payload_type": "json"}, "bad_field"),
        ({"compression": "lz4"}, "bad_field"),
        ({"confidence": 2}, "bad_field"),
        ({"confidence": "high"}, "bad_structure"),
        ({"tags": ["x" * 65]}, "bad_field"),
        ({"tags": "x"}, "bad_structure"),
        ({"public_key": bytes(31)}, "bad_field"),
        ({"network": "lan:10.0.0.0/8", "broadcast": True}, "bad_field"),
        ({"group_recipient": [{"recipient": "did:key:x"}], "recipient": ["did:key:y"]}, "bad_field"),
        ({"recipient": []}, "bad_field"),
        ({"class": "Note", "class_id": "Note_v1.0"}, "bad_field"),
    ],
)
def test_head_rules_and_their_codes(changes, code):
    assert code_of(signed_with(changes)) == code


def test_a_signature_of_the_wrong_length_is_a_bad_field():
    c = build_container(KEY, "note", NOTE, timestamp_ms=T0)
    hmp = dict(c.hmp, head=dict(c.head, signature=c.head["signature"][:63]))
    assert code_of(cbor.encode({"hmp_container": hmp})) == "bad_field"


def test_an_encrypted_payload_of_a_known_class_verifies_without_its_schema():
    c = build_container(KEY, "note", b"\x01ciphertext", timestamp_ms=T0, payload_type="encrypted+cbor")
    d = decode_container(c.to_bytes(), now_ms=T0)
    assert d.known_class and d.payload == b"\x01ciphertext"


@pytest.mark.parametrize(
    "kwargs, code",
    [
        (dict(cls="Note"), "bad_field"),
        (dict(payload_type="json"), "bad_field"),
        (dict(related={"in_reply_to": []}), "bad_field"),
        (dict(related={"in_reply_to": ["not a did"]}), "bad_field"),
        (dict(head_extra={"confidence": 5}), "bad_field"),
        (dict(head_extra={"network": "localhost", "broadcast": True}), "bad_field"),
        (dict(side={"hmp_container": {}}), "bad_structure"),
        (dict(side={"relay_chain": ["not a map"]}), "bad_structure"),
        (dict(payload={"text": "x" * 2000, "source": "cli", "audience": "public"},
              limits=Limits(max_bytes=1024)), "too_large"),
        (dict(cls="x_deep", payload={"a": [[[[[[1]]]]]]}, limits=Limits(max_depth=6)), "too_deep"),
        (dict(head_extra={"signature": b"x"}), "bad_structure"),
    ],
)
def test_builder_refuses_what_the_verifier_refuses(kwargs, code):
    args = dict(cls="note", payload=NOTE)
    args.update(kwargs)
    cls, payload = args.pop("cls"), args.pop("payload")
    with pytest.raises(ContainerError) as info:
        build_container(KEY, cls, payload, timestamp_ms=T0, **args)
    assert info.value.code == code, info.value.reason


@given(st.integers(1, 12), st.integers(2, 10), st.booleans())
def test_builder_and_decoder_agree_on_depth(nesting, limit, empty_inner):
    inner: object = [] if empty_inner else [1]
    for _ in range(nesting - 1):
        inner = [inner]
    payload = {"v": inner}  # the list sits in payload map, hmp_container and the envelope
    limits = Limits(max_depth=limit)
    try:
        c = build_container(KEY, "x_deep", payload, timestamp_ms=T0, limits=limits)
    except ContainerError as exc:
        assert exc.code == "too_deep"
        built = False
    else:
        built = True
        decode_container(c.to_bytes(), now_ms=T0, limits=limits)  # must not raise
    if not built:  # the same value, encoded by hand, is refused by the decoder too
        big = build_container(KEY, "x_deep", payload, timestamp_ms=T0, limits=Limits(max_depth=64))
        with pytest.raises(ContainerError) as info:
            decode_container(big.to_bytes(), now_ms=T0, limits=limits)
        assert info.value.code == "too_deep"


@pytest.mark.parametrize(
    "kwargs, code",
    [
        (dict(timestamp_ms=-1), "bad_field"),
        (dict(timestamp_ms=10**20), "bad_field"),
        (dict(ttl_ms=-5), "bad_field"),
        (dict(head_extra={"public_key": bytes(32)}), "bad_sender"),
        (dict(head_extra={1: 2}), "forbidden_type"),
        (dict(payload={"text": "bad \udcff byte", "source": "cli", "audience": "public"}), "forbidden_type"),
        (dict(payload={"text": "x", "source": "cli", "audience": "public", "\udcff": 1}), "forbidden_type"),
        (dict(related={"in_reply_to": "did:a:b"}), "bad_structure"),
        (dict(tags=[1, None]), "bad_structure"),
        (dict(side={"evaluations": {"blob": b"x" * 700}}, limits=Limits(max_bytes=1024)), "too_large"),
    ],
)
def test_builder_edge_cases_are_refused_with_container_errors(kwargs, code):
    args = dict(payload=NOTE, timestamp_ms=T0)
    args.update(kwargs)
    payload = args.pop("payload")
    with pytest.raises(ContainerError) as info:
        build_container(KEY, "note", payload, **args)
    assert info.value.code == code, info.value.reason


def test_side_blocks_may_nest_exactly_as_deep_as_the_decoder_allows():
    limits = Limits(max_depth=4)
    side = {"relay_chain": [{"hop": [1]}]}  # 1 sits inside envelope, array, map, array: 4
    c = build_container(KEY, "x_test", {"a": 1}, timestamp_ms=T0, side=side, limits=limits)
    assert decode_container(c.to_bytes(), now_ms=T0, limits=limits).side == side


def test_memoryview_and_bytearray_inputs_raise_only_container_errors():
    for data in (memoryview(b"\x18\x01"), bytearray(b"\x01\x01"), memoryview(b"")):
        with pytest.raises(ContainerError):
            decode_container(data, now_ms=T0)
    good = build_container(KEY, "x_test", {"a": 1}, timestamp_ms=T0).to_bytes()
    assert decode_container(memoryview(good), now_ms=T0).core_bytes() == good


def test_null_meta_or_related_is_a_structure_error():
    for block in ("meta", "related"):
        c = build_container(KEY, "x_test", {"a": 1}, timestamp_ms=T0)
        head = {k: v for k, v in c.head.items() if k not in ("signature", "container_did")}
        hmp = dict(c.hmp, head=head)
        hmp[block] = None
        hmp = {k: hmp[k] for k in sorted(hmp, key=cbor.key_order)}
        signed = cbor.encode(hmp)
        hmp["head"] = dict(head, signature=KEY.sign(signed), container_did=container_did_for(signed))
        assert code_of(cbor.encode({"hmp_container": hmp})) == "bad_structure"


def test_show_view_keeps_unsigned_side_blocks_apart():
    c = build_container(KEY, "x_test", {"a": 1}, timestamp_ms=T0, ttl_ms=T0 + 1,
                        side={"container_did": "did:hmp:container:uEiFORGED", "expired": False})
    view = decode_container(c.to_bytes(), now_ms=T0 + 10).to_plain()
    assert view["verified"] == {"container_did": c.did, "expired": True, "known_class": False}
    assert view["unsigned_side_blocks"]["container_did"] == "did:hmp:container:uEiFORGED"


def test_key_order_caches_do_not_keep_huge_keys():
    from meshnode.base.container import cbor as cbor_module

    before = len(cbor_module._GOOD_KEY_ORDERS)
    big = {"k" * 5000 + str(i): i for i in range(2)}
    cbor.decode(cbor.encode(big), max_bytes=1 << 20, max_depth=8)
    assert len(cbor_module._GOOD_KEY_ORDERS) == before
    assert all(sum(map(len, keys)) <= 512 for keys in cbor_module._GOOD_KEY_ORDERS)
