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

import functools
import hashlib

import cbor2
from nacl.bindings import crypto_sign_open
from nacl.exceptions import BadSignatureError, CryptoError

from meshnode.container import cbor, schema
from meshnode.container.errors import ContainerError
from meshnode.container.model import (
    CONTAINER_DID_PREFIX,
    CONTAINER_VERSION,
    DEFAULT_LIMITS,
    SIG_ALGO,
    Container,
    Limits,
    container_did_for,
)
from meshnode.container.timefmt import parse_ms
from meshnode.errors import IdentityError
from meshnode.identity.did import public_key_from_did

_RELATED_ITEM = schema.list_of(schema.did, max_items=1024, non_empty=True)


def decode_container(data: bytes, *, now_ms: int, limits: Limits = DEFAULT_LIMITS) -> Container:
    """Return the verified Container encoded in ``data``, or raise ContainerError."""
    data = cbor.as_bytes(data)
    value, _ = cbor.decode_tree(data, max_bytes=limits.max_bytes, max_depth=limits.max_depth,
                                max_items=limits.max_items, walk=False)
    # Walk the blocks whose content is not otherwise compared; in the usual
    # layout the envelope and hmp_container maps are checked byte for byte below.
    hmp_in = value.get("hmp_container") if type(value) is dict else None
    if type(hmp_in) is dict and len(value) == 1 and hmp_in.keys() <= cbor.HMP_KEYS:
        has_float = False
        for block in hmp_in.values():
            has_float = cbor.check_tree(block) or has_float
    else:
        has_float = cbor.check_tree(value)
    dump = cbor2.dumps if not has_float else _canonical_dumps
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

    # 2. timestamp
    timestamp_ms = parse_ms(head["timestamp"])
    if timestamp_ms > now_ms + limits.clock_skew_ms:
        raise ContainerError(
            "future_timestamp",
            f"timestamp {head['timestamp']} is {(timestamp_ms - now_ms) / 1000:.1f} s ahead; "
            f"the allowed clock skew is {limits.clock_skew_ms / 1000:.0f} s",
        )
    # 3. ttl
    expired = False
    if "ttl" in head:
        expired = parse_ms(head["ttl"], "ttl") <= now_ms

    # 4. payload hash
    payload_hash = "sha256:" + hashlib.sha256(payload_bytes).hexdigest()
    if payload_hash != head["payload_hash"]:
        if not schema.PAYLOAD_HASH.fullmatch(head["payload_hash"]):
            raise ContainerError("bad_field", "payload_hash must be 'sha256:' and 64 lowercase hex digits")
        raise ContainerError("payload_hash_mismatch", f"payload hashes to {payload_hash}, head says {head['payload_hash']}")

    # 5. signature over the signed bytes (hmp_container without the two derived head fields)
    key = _sender_key(head["sender_did"])
    head_signed = dict(head)  # keeps the canonical key order
    del head_signed["signature"], head_signed["container_did"]
    if tail is not None:
        signed = cbor.encode_hmp(dump(head_signed), tail, count)
    else:  # unknown blocks inside hmp_container: signed and kept like the rest
        signed = dump({k: (head_signed if k == "head" else v) for k, v in hmp.items()})
    try:
        crypto_sign_open(head["signature"] + signed, key)
    except (BadSignatureError, CryptoError, ValueError):
        raise ContainerError("bad_signature", f"signature does not verify for {head['sender_did']}") from None

    # 6. bindings
    if "public_key" in head and head["public_key"] != key:
        raise ContainerError("bad_sender", "head.public_key is not the key of head.sender_did")
    did = container_did_for(signed)
    if head["container_did"] != did:
        if not head["container_did"].startswith(CONTAINER_DID_PREFIX):
            raise ContainerError("bad_field", f"container_did must start with {CONTAINER_DID_PREFIX}")
        raise ContainerError("did_mismatch", f"head.container_did should be {did}")

    # 7. class schema (a binary or encrypted payload cannot be checked without its key)
    class_rules = schema.class_schema(head["class"], head["class_version"])
    if class_rules is not None and head["payload_type"] == "cbor":
        class_rules.validate(hmp["payload"], code="class_schema")
    # the exact verified bytes are what gets stored, never a re-encoding of mutable dicts
    core = data if not side else None
    return Container(did, hmp, side, timestamp_ms, expired, class_rules is not None, has_float, core)


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


def _canonical_dumps(value: object) -> bytes:
    return cbor2.dumps(value, canonical=True)


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


def check_side(side: dict) -> None:
    """Shape of the unsigned side blocks (their own signatures are checked where they are used)."""
    if "hmp_container" in side:
        raise ContainerError("bad_structure", "a side block cannot be named hmp_container")
    for block in ("referenced-by", "evaluations"):
        if block in side and type(side[block]) is not dict:
            raise ContainerError("bad_structure", f"{block} must be a map")
    if "relay_chain" in side:
        chain = side["relay_chain"]
        if type(chain) is not list or any(type(hop) is not dict for hop in chain):
            raise ContainerError("bad_structure", "relay_chain must be an array of maps")


def check_head_values(head: dict, payload: object) -> None:
    if head["version"] != CONTAINER_VERSION:
        raise ContainerError("unsupported_version", f"container version {head['version']!r}; meshnode speaks {CONTAINER_VERSION}")
    if head["sig_algo"] != SIG_ALGO:
        raise ContainerError("unsupported_algorithm", f"sig_algo {head['sig_algo']!r}; only {SIG_ALGO} is accepted")
    _check_class_names(head["class"], head["class_version"], head["class_id"])
    ptype = head["payload_type"]
    payload_is_bytes = ptype == "binary" or (ptype.startswith("encrypted+") and len(ptype) > 10)
    if ptype != "cbor" and not payload_is_bytes:
        raise ContainerError("bad_field", f"payload_type {ptype!r}: use cbor, binary or encrypted+<format>")
    if payload_is_bytes and type(payload) is not bytes:
        raise ContainerError("bad_structure", f"payload_type {ptype} needs a byte-string payload")
    if not payload_is_bytes and type(payload) is not dict:
        raise ContainerError("bad_structure", "payload_type cbor needs a map payload")
    if head.get("network") and head.get("broadcast") is True:
        raise ContainerError("bad_field", "a container scoped to a network must not set broadcast")
    if "group_recipient" in head and ("recipient" in head or "key_recipient" in head):
        raise ContainerError("bad_field", "group_recipient cannot be combined with recipient or key_recipient")


@functools.lru_cache(maxsize=1024)  # a handful of (class, version) pairs recur in every container
def _check_class_names(cls: str, version: str, class_id: str) -> None:
    if not schema.CLASS_NAME.fullmatch(cls):
        raise ContainerError("bad_field", f"class {cls!r} is not [a-z][a-z0-9_]*")
    if not schema.CLASS_VERSION.fullmatch(version):
        raise ContainerError("bad_field", f"class_version {version!r} is not MAJOR.MINOR")
    if class_id != f"{cls}_v{version}":
        raise ContainerError("bad_field", f"class_id must be {cls}_v{version}")


def check_related(related: dict) -> None:
    for name, targets in related.items():
        err = _RELATED_ITEM(targets)
        if err:
            code = "bad_field" if isinstance(err, schema.WrongValue) else "bad_structure"
            raise ContainerError(code, f"related.{name[:60]!r} {err}")


def _sender_key(sender_did: str) -> bytes:
    try:
        return public_key_from_did(sender_did)
    except IdentityError as exc:
        raise ContainerError("bad_sender", exc.reason) from None
