"""The verifier's one-pass checks of the usual layout, the builder's head template and the caches
behind them: they must accept and refuse exactly what the full checks do, and stay bounded."""

from __future__ import annotations

import random

import cbor2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nacl.signing import SigningKey

from meshnode.base.container import ContainerError, build_container, cbor, parse_ms, timefmt, usual
from meshnode.base.container import head_template as templates
from meshnode.base.container.model import DEFAULT_LIMITS
from meshnode.base.container.verify import _decode_any, decode_container
from meshnode.base.identity import ed25519
from meshnode.base.identity.keys import NodeKey
from strategies import maps, relations, tags
from test_container_properties import _mutate

T0 = parse_ms("2026-03-01T00:00:00.000Z")
NOW = T0 + 10**10
KEYS = [NodeKey(bytes([i]) * 32) for i in range(1, 4)]
NOTE = {"text": "hello #demo", "topic": "chat", "source": "cli", "audience": "friends", "priority": 0,
        "hashtags": ["demo"]}

containers = st.builds(
    lambda key, cls, payload, meta, related, tg, extra, dt: build_container(
        key, cls, payload, timestamp_ms=T0 + dt, meta=meta or None, related=related or None, tags=tg or None,
        head_extra=extra or None),
    st.sampled_from(KEYS),
    st.sampled_from(["x_test", "x_other"]),
    maps,
    st.dictionaries(st.sampled_from(["created_by", "sources"]), st.text(max_size=8), max_size=2),
    relations,
    st.just([]) | tags,  # half of them the usual head, which the builder makes from a template
    st.just({}) | st.fixed_dictionaries({}, optional={"confidence": st.floats(0, 1), "x_unknown": maps}),
    st.integers(0, 10**9),
)


def _full_checks(data: bytes):
    """decode_container without the one-pass checks: every step in order."""
    value, _ = cbor.decode_tree(data, max_bytes=DEFAULT_LIMITS.max_bytes, max_depth=DEFAULT_LIMITS.max_depth,
                                max_items=DEFAULT_LIMITS.max_items, walk=False)
    return _decode_any(value, cbor.as_bytes(data), NOW, DEFAULT_LIMITS)


def _outcome(decode, data: bytes):
    try:
        c = decode(data)
    except ContainerError as exc:
        return exc.code
    return (c.did, c.hmp, c.side, c.timestamp_ms, c.expired, c.known_class, c.core_bytes())


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(containers, st.lists(st.integers(0, 2**32), min_size=4, max_size=4))
def test_the_one_pass_checks_and_the_full_checks_agree(c, seeds):
    raw = c.to_bytes()
    if len(raw) <= DEFAULT_LIMITS.max_bytes:
        assert usual.usual_layout(cbor2.loads(raw), raw) is not None  # the fast path is the one taken
    assert _outcome(lambda d: decode_container(d, now_ms=NOW), raw) == _outcome(_full_checks, raw)
    for seed in seeds:
        rng = random.Random(seed)
        data = raw
        for _ in range(rng.randrange(1, 4)):
            data = _mutate(data, rng)
        assert _outcome(lambda d: decode_container(d, now_ms=NOW), data) == _outcome(_full_checks, data)


def _resigned(c, **head_changes) -> bytes:
    """``c`` with head fields changed and signed again by KEYS[0] (so only the change can be at fault)."""
    hmp = c.hmp
    head = dict(hmp["head"], **head_changes)
    del head["signature"], head["container_did"]
    signed = cbor.encode(dict(hmp, head=head))
    from meshnode.base.container.model import container_did_for
    head = dict(head, signature=KEYS[0].sign(signed), container_did=container_did_for(signed))
    return cbor.encode({"hmp_container": dict(hmp, head=head)})


@pytest.mark.parametrize("changes, code", [
    ({"version": "9.9"}, "unsupported_version"),
    ({"sig_algo": "rsa"}, "unsupported_algorithm"),
    ({"class_id": "note_v2.0"}, "bad_field"),
    ({"payload_type": "binary"}, "bad_structure"),
    ({"timestamp": "2026-03-01T00:00:60.000Z"}, "bad_field"),
    ({"timestamp": "x" * 41}, "bad_structure"),
    ({"sender_did": "did:key:zNotAKey"}, "bad_sender"),
    ({"schema": 7}, "bad_structure"),
    ({"class": ["note"]}, "bad_structure"),  # unhashable where the fast path looks up a sender
    ({"version": {"v": 1}}, "bad_structure"),
    ({"sender_did": [KEYS[0].did]}, "bad_structure"),
])
def test_a_known_sender_with_a_wrong_fixed_field_is_refused_with_the_full_checks_code(changes, code):
    c = build_container(KEYS[0], "note", NOTE, timestamp_ms=T0, meta={"created_by": "AGENT"})
    decode_container(c.to_bytes(), now_ms=NOW)  # the sender's fixed fields are now remembered
    data = _resigned(c, **changes)
    with pytest.raises(ContainerError) as info:
        decode_container(data, now_ms=NOW)
    assert info.value.code == code == _outcome(_full_checks, data)


def test_a_remembered_sender_does_not_make_a_forged_container_pass():
    c = build_container(KEYS[0], "note", NOTE, timestamp_ms=T0, meta={"created_by": "AGENT"})
    assert decode_container(c.to_bytes(), now_ms=NOW).did == c.did
    forged = build_container(KEYS[1], "note", NOTE, timestamp_ms=T0, meta={"created_by": "AGENT"},
                             head_extra=None)
    head = dict(forged.head, sender_did=KEYS[0].did)  # KEYS[1]'s signature, KEYS[0]'s name
    data = cbor.encode({"hmp_container": dict(forged.hmp, head=head)})
    with pytest.raises(ContainerError) as info:
        decode_container(data, now_ms=NOW)
    assert info.value.code in ("bad_signature", "did_mismatch")
    head = dict(c.head, signature=bytes(64))
    with pytest.raises(ContainerError) as info:
        decode_container(cbor.encode({"hmp_container": dict(c.hmp, head=head)}), now_ms=NOW)
    assert info.value.code == "bad_signature"


@given(st.sampled_from(KEYS), st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True),
       st.from_regex(r"[0-9]{1,3}\.[0-9]{1,3}", fullmatch=True), st.sampled_from(["cbor", "binary", "encrypted+x"]),
       st.integers(0, timefmt.MAX_MS), st.binary(min_size=64, max_size=64))
def test_the_head_template_encodes_as_the_generic_encoder_does(key, cls, version, payload_type, ms, signature):
    template = templates.head_template(key.did, cls, version, payload_type)
    timestamp, payload_hash, did = timefmt.format_ms(ms), "sha256:" + "ab" * 32, "did:hmp:container:uEiA" + "x" * 43
    signed_head, middle = template.encode(timestamp, payload_hash)
    head = template.full_head(timestamp, payload_hash, signature, did)
    assert template.full_bytes(signature, did, middle) == cbor.encode(head)
    assert signed_head == cbor.encode({k: v for k, v in head.items() if k not in ("signature", "container_did")})
    assert list(head) == list(cbor.canonicalize(head)[0])


def test_the_builder_makes_the_usual_head_as_it_makes_any_head():
    c = build_container(KEYS[0], "note", NOTE, timestamp_ms=T0, meta={"created_by": "AGENT"})
    with_extra = build_container(KEYS[0], "note", NOTE, timestamp_ms=T0, meta={"created_by": "AGENT"},
                                 head_extra={"x_extra": 1})  # the generic head
    head = {k: v for k, v in with_extra.head.items() if k not in ("x_extra", "signature", "container_did")}
    assert {k: v for k, v in c.head.items() if k not in ("signature", "container_did")} == head
    assert decode_container(c.to_bytes(), now_ms=NOW).hmp == c.hmp


def test_the_caches_are_bounded():
    for i in range(usual._SENDERS_MAX + 10):
        key = NodeKey(i.to_bytes(32, "big"))
        data = build_container(key, "note", NOTE, timestamp_ms=T0).to_bytes()
        decode_container(data, now_ms=NOW)
        assert len(usual._SENDERS) <= usual._SENDERS_MAX
        assert len(templates._TEMPLATES) <= templates._TEMPLATES_MAX
    for i in range(usual._PLANS_MAX + 10):
        data = build_container(KEYS[0], "x_test", {}, timestamp_ms=T0, head_extra={f"x{i}": 1}).to_bytes()
        decode_container(data, now_ms=NOW)
        assert len(usual._PLANS) <= usual._PLANS_MAX
    for minute in range(timefmt._MINUTES_MAX + 10):
        parse_ms(timefmt.format_ms(minute * 60_000))
        assert len(timefmt._MINUTES) <= timefmt._MINUTES_MAX


def test_a_remembered_minute_still_refuses_a_bad_second():
    assert parse_ms("2026-03-01T00:00:59.999Z") == T0 + 59_999
    for text in ("2026-03-01T00:00:60.000Z", "2026-03-01T00:00:5x.000Z", "2026-03-01T00:00:59.00Z"):
        with pytest.raises(ContainerError) as info:
            parse_ms(text)
        assert info.value.code == "bad_field"


@given(st.binary(max_size=2000), st.integers(0, 2**31))
def test_ed25519_is_pynacl_without_the_copies(message, seed):
    key = NodeKey(seed.to_bytes(32, "big"))
    nacl_key = SigningKey(seed.to_bytes(32, "big"))
    signature = key.sign(message)
    assert signature == nacl_key.sign(message).signature
    assert ed25519.verify(key.public_key, signature, message)
    assert not ed25519.verify(key.public_key, signature, message + b"\0")
    assert not ed25519.verify(key.public_key, signature[:63], message)
    assert not ed25519.verify(bytes(nacl_key.verify_key), bytes(64), message)
    with pytest.raises(ValueError):
        ed25519.verify(key.public_key[:31], signature, message)


def test_non_canonical_bytes_under_a_valid_signature_are_refused():
    c = build_container(KEYS[0], "note", NOTE, timestamp_ms=T0, meta={"created_by": "AGENT"})
    raw = c.to_bytes()
    short = cbor2.dumps("priority") + b"\x00"  # priority 0, in its one shortest form
    assert raw.count(short) == 1
    longer = raw.replace(short, cbor2.dumps("priority") + b"\x18\x00")  # the same 0, in two bytes
    assert cbor2.loads(longer) == cbor2.loads(raw)  # same value, so the same signed bytes
    with pytest.raises(ContainerError) as info:
        decode_container(longer, now_ms=NOW)
    assert info.value.code == "non_deterministic"
