"""Decode and verify a container, in HMP v5's order (section 3.10).

1. structure: strict deterministic CBOR, blocks and head fields typed;
2. timestamp not beyond ``now + clock skew``;
3. ttl: an expired container is kept but marked ``expired``;
4. payload hash;
5. signature (Ed25519, key taken from the sender's did:key);
6. DID-to-key binding: ``head.public_key``, when present, is the sender's key;
   ``head.container_did`` is the one derived from the signed bytes;
7. class schema, for classes meshnode knows; unknown classes pass and are kept.

Pure: no I/O, no clock (``now_ms`` is passed in). Raises only ContainerError.
"""

from __future__ import annotations

import hashlib

import cbor2

from meshnode.base.container import cbor, schema
from meshnode.base.container.checks import (  # noqa: F401  (check_head_values: the builder imports it from here)
    check_head_values,
    check_related,
    check_side,
    sender_key,
)
from meshnode.base.container.errors import ContainerError
from meshnode.base.container.model import CONTAINER_DID_PREFIX, DEFAULT_LIMITS, Container, Limits, container_did_for
from meshnode.base.container.timefmt import parse_ms
from meshnode.base.container.usual import usual_layout
from meshnode.base.identity import ed25519


def decode_container(data: bytes, *, now_ms: int, limits: Limits = DEFAULT_LIMITS) -> Container:
    """Return the verified Container encoded in ``data``, or raise ContainerError."""
    data = cbor.as_bytes(data)
    value, _ = cbor.decode_tree(data, max_bytes=limits.max_bytes, max_depth=limits.max_depth,
                                max_items=limits.max_items, walk=False)
    checked = usual_layout(value, data)  # steps 1, 4 and 6 for the usual layout, in one pass
    if checked is None:  # another layout, or a fault: every step in order, every fault named
        return _decode_any(value, data, now_ms, limits)
    hmp, head, signed, did, key, has_float = checked
    timestamp_ms, expired = _check_times(head, now_ms, limits)
    _check_signature(key, head, signed)
    if "public_key" in head:
        _check_public_key(head, key)
    known = _check_class(head, hmp["payload"])
    return Container(did, hmp, {}, timestamp_ms, expired, known, has_float, data)


def _decode_any(value: object, data: bytes, now_ms: int, limits: Limits) -> Container:
    # 1. structure
    hmp, side, head, payload_bytes, signed, has_float = _any_layout(value, data)
    # 2. timestamp, 3. ttl
    timestamp_ms, expired = _check_times(head, now_ms, limits)

    # 4. payload hash
    payload_hash = "sha256:" + hashlib.sha256(payload_bytes).hexdigest()
    if payload_hash != head["payload_hash"]:
        if not schema.PAYLOAD_HASH.fullmatch(head["payload_hash"]):
            raise ContainerError("bad_field", "payload_hash must be 'sha256:' and 64 lowercase hex digits")
        raise ContainerError("payload_hash_mismatch", f"payload hashes to {payload_hash}, head says {head['payload_hash']}")

    # 5. signature over the signed bytes (hmp_container without the two derived head fields)
    key = sender_key(head["sender_did"])
    _check_signature(key, head, signed)

    # 6. bindings
    _check_public_key(head, key)
    did = container_did_for(signed)
    if head["container_did"] != did:
        if not head["container_did"].startswith(CONTAINER_DID_PREFIX):
            raise ContainerError("bad_field", f"container_did must start with {CONTAINER_DID_PREFIX}")
        raise ContainerError("did_mismatch", f"head.container_did should be {did}")

    # 7. class schema
    known = _check_class(head, hmp["payload"])
    # the exact verified bytes are what gets stored, never a re-encoding of mutable dicts
    core = data if not side else None
    return Container(did, hmp, side, timestamp_ms, expired, known, has_float, core)


def _check_times(head: dict, now_ms: int, limits: Limits) -> tuple[int, bool]:
    """Steps 2 and 3: ``(timestamp_ms, expired)``; a timestamp too far ahead is refused."""
    timestamp_ms = parse_ms(head["timestamp"])
    if timestamp_ms > now_ms + limits.clock_skew_ms:
        raise ContainerError(
            "future_timestamp",
            f"timestamp {head['timestamp']} is {(timestamp_ms - now_ms) / 1000:.1f} s ahead; "
            f"the allowed clock skew is {limits.clock_skew_ms / 1000:.0f} s",
        )
    return timestamp_ms, "ttl" in head and parse_ms(head["ttl"], "ttl") <= now_ms


def _check_signature(key: bytes, head: dict, signed: bytes) -> None:
    if not ed25519.verify(key, head["signature"], signed):
        raise ContainerError("bad_signature", f"signature does not verify for {head['sender_did']}")


def _check_public_key(head: dict, key: bytes) -> None:
    if "public_key" in head and head["public_key"] != key:
        raise ContainerError("bad_sender", "head.public_key is not the key of head.sender_did")


def _check_class(head: dict, payload: object) -> bool:
    """Step 7: the payload against its class schema, when meshnode knows the class (returned).
    A binary or encrypted payload cannot be checked without its key."""
    class_rules = schema.class_schema(head["class"], head["class_version"])
    if class_rules is not None and head["payload_type"] == "cbor":
        class_rules.validate(payload, code="class_schema")
    return class_rules is not None


def _any_layout(value: object, data: bytes) -> tuple[dict, dict, dict, bytes, bytes, bool]:
    """Step 1 for any input, every fault named: ``(hmp, side, head, payload_bytes, signed, has_float)``."""
    # Walk the blocks whose content is not otherwise compared; in the usual
    # layout the envelope and hmp_container maps are checked byte for byte below.
    hmp_in = value.get("hmp_container") if type(value) is dict else None
    if type(hmp_in) is dict and len(value) == 1 and hmp_in.keys() <= cbor.HMP_KEYS:
        has_float = False
        for block in hmp_in.values():
            has_float = cbor.check_tree(block) or has_float
    else:
        has_float = cbor.check_tree(value)
    dump = cbor2.dumps if not has_float else cbor.canonical_dumps
    parts = _standard_parts(value, dump)
    if parts is None:  # not the usual layout (or not a container): compare the generic way
        cbor.check_encoding(value, has_float, data)
        payload_bytes = tail = count = None
    else:
        payload_bytes, tail, count = parts
        if len(value) == 1:  # no side blocks: the input must be exactly prefix + hmp_container
            head_bytes = dump(value["hmp_container"]["head"])
            cbor.check_encoding(value, has_float, data,
                                cbor.ENVELOPE_PREFIX + cbor.encode_hmp(head_bytes, tail, count))
        else:
            cbor.check_encoding(value, has_float, data)
    hmp, side = _check_envelope(value)
    if payload_bytes is None:
        payload_bytes = dump(hmp["payload"])
    head = hmp["head"]
    schema.HEAD.validate(head, "bad_structure", "bad_field")
    check_head_values(head, hmp["payload"])
    related = hmp.get("related")
    if related is not None:
        check_related(related)
    head_signed = dict(head)  # keeps the canonical key order
    del head_signed["signature"], head_signed["container_did"]
    if tail is not None:
        signed = cbor.encode_hmp(dump(head_signed), tail, count)
    else:  # unknown blocks inside hmp_container: signed and kept like the rest
        signed = dump({k: (head_signed if k == "head" else v) for k, v in hmp.items()})
    return hmp, side, head, payload_bytes, signed, has_float


def _standard_parts(value: object, dump) -> tuple[bytes, bytes, int] | None:
    """For the usual layout, the encodings shared by the checks: payload, tail, key count.

    None when the value is not an envelope whose hmp_container has only the
    known blocks (head, meta, payload, related).
    """
    if type(value) is not dict:
        return None
    hmp = value.get("hmp_container")
    if type(hmp) is not dict or not hmp.keys() <= cbor.HMP_KEYS or "head" not in hmp or "payload" not in hmp:
        return None
    payload_bytes = dump(hmp["payload"])
    tail = cbor.encode_tail(dump(hmp["meta"]) if "meta" in hmp else None, payload_bytes,
                            dump(hmp["related"]) if "related" in hmp else None)
    return payload_bytes, tail, len(hmp)


def _check_envelope(value: object) -> tuple[dict, dict]:
    if type(value) is not dict:
        raise ContainerError("bad_structure", "a container is a CBOR map")
    hmp = value.get("hmp_container")
    if type(hmp) is not dict:
        raise ContainerError("bad_structure", "hmp_container is missing or not a map")
    if type(hmp.get("head")) is not dict:
        raise ContainerError("bad_structure", "hmp_container.head is missing or not a map")
    if "payload" not in hmp:
        raise ContainerError("bad_structure", "hmp_container.payload is missing")
    for block in ("meta", "related"):
        if block in hmp and (type(hmp[block]) is not dict or not hmp[block]):
            raise ContainerError("bad_structure", f"hmp_container.{block} must be a non-empty map when present")
    side = {k: v for k, v in value.items() if k != "hmp_container"}
    check_side(side)
    return hmp, side
