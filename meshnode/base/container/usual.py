"""Structure checks for the usual container layout, in one pass and mostly at C speed.

Nearly every container a node receives has the same layout: an envelope with
``hmp_container`` and no side blocks, a head with the fields HMP requires plus
a few optional ones, and a sender that has sent before. :func:`usual_layout`
checks exactly what the full checks in verify.py check (types, key order,
deterministic bytes, head values), but for this layout only, and cheaply:

- the head's key list decides, once per distinct list, which fields need a
  check beyond the required ones (:func:`_head_plan`);
- the eight head fields that stay the same from one container of a sender and
  class to the next (version, class, ..., sender_did) are checked once per
  distinct combination, which also decodes the sender's did:key once
  (:data:`_SENDERS`, bounded). What is remembered is a pure function of those
  eight strings; nothing about any container's signature is;
- the input is compared byte for byte with the encodings the signature check
  needs anyway (payload, meta, related, head), so nothing is encoded twice.

It never raises: on anything unusual or wrong it returns None, and the caller
runs the full checks, which name the fault with its precise code. So the two
paths cannot disagree on what is accepted; a test checks that on mutated
containers.
"""

from __future__ import annotations

import operator
from hashlib import sha256
from typing import Any

import cbor2

from meshnode.base.container import schema
from meshnode.base.container.cbor import ENVELOPE_PREFIX, canonical_dumps, check_keys, check_tree, encode_tail
from meshnode.base.container.checks import (
    COMBINED_FIELDS,
    _check_class_names,
    check_head_combinations,
    check_related,
    sender_key,
)
from meshnode.base.container.errors import ContainerError
from meshnode.base.container.head_template import FIXED_FIELDS, PER_CONTAINER_FIELDS, HeadTemplate
from meshnode.base.container.model import CONTAINER_VERSION, SIG_ALGO, container_did_for

# hmp_container's key lists in canonical order (head, meta?, payload, related?) -> the bytes
# before the head's in the input, and in the signed bytes
_K_HEAD = cbor2.dumps("head")
_LAYOUTS = {keys: (ENVELOPE_PREFIX + bytes((0xA0 + len(keys),)) + _K_HEAD, bytes((0xA0 + len(keys),)) + _K_HEAD)
            for keys in (("head", "payload"), ("head", "meta", "payload"), ("head", "payload", "related"),
                         ("head", "meta", "payload", "related"))}

# Required head fields: those that stay the same across a sender's containers of one class,
# and those that change with every container (checked in _checked).
_fixed = operator.itemgetter(*FIXED_FIELDS)
_REQUIRED = frozenset(n for n, (_, required) in schema.HEAD.fields.items() if required)
assert _REQUIRED == set(FIXED_FIELDS + PER_CONTAINER_FIELDS)

_SENDERS: dict[tuple, tuple[bytes, HeadTemplate]] = {}  # fixed head fields -> (sender's key, their encodings)
_SENDERS_MAX = 1024  # each entry is 8 strings of at most 256 characters, and only entries that passed
_PLANS: dict[tuple, tuple] = {}  # head key list -> what to check beyond the required fields
_PLANS_MAX = 4096


def usual_layout(value: Any, data: bytes) -> tuple | None:
    """``(hmp, head, signed, did, key, has_float)`` when ``value`` (decoded from ``data``) is a
    container in the usual layout that passes every structure check and whose payload hash and
    container DID are right; else None. The timestamp, signature and class schema are left to
    the caller, as is every fault: the full checks will name it."""
    if type(value) is not dict or len(value) != 1:
        return None
    hmp = value.get("hmp_container")
    if type(hmp) is not dict:
        return None
    try:
        return _checked(hmp, data)
    except Exception:  # any fault (an array where a text belongs is unhashable): the full checks name it
        return None


def _checked(hmp: dict, data: bytes) -> tuple | None:
    prefixes = _LAYOUTS.get(tuple(hmp))
    if prefixes is None:
        return None
    head, payload = hmp["head"], hmp["payload"]
    if type(head) is not dict:
        return None
    plan = _PLANS.get(tuple(head)) or _head_plan(head)
    if plan is None:
        return None
    key, template = _SENDERS.get(_fixed(head)) or _check_fixed(head)
    signature, timestamp, container_did = head["signature"], head["timestamp"], head["container_did"]
    if (type(payload) is not template.payload_type or type(signature) is not bytes or len(signature) != 64
            or type(timestamp) is not str or len(timestamp) > 40 or type(container_did) is not str):
        return None
    extra, combined = plan
    has_float = False
    if extra:  # optional or unknown head fields
        for name, check in extra:
            if check(head[name]):
                return None
        if combined:
            check_head_combinations(head)
        has_float = check_tree(head)
    meta, related = hmp.get("meta"), hmp.get("related")
    if meta is not None:
        if type(meta) is not dict or not meta:
            return None
        has_float = check_tree(meta) or has_float
    if related is not None:
        if type(related) is not dict or not related:
            return None
        check_tree(related)
        check_related(related)
    has_float = check_tree(payload) or has_float
    # deterministic bytes: the input must be exactly these encodings, in this order
    dump = cbor2.dumps if not has_float else canonical_dumps
    payload_bytes = dump(payload)
    payload_hash = "sha256:" + sha256(payload_bytes).hexdigest()
    if head["payload_hash"] != payload_hash:
        return None
    tail = encode_tail(None if meta is None else dump(meta), payload_bytes,
                       None if related is None else dump(related))
    if extra:
        head_bytes = dump(head)
        head_signed = head.copy()
        del head_signed["signature"], head_signed["container_did"]
        signed_head = dump(head_signed)
    else:  # the usual head: only the four fields that change need encoding
        signed_head, middle = template.encode(timestamp, payload_hash)
        head_bytes = template.full_bytes(signature, container_did, middle)
    if data != prefixes[0] + head_bytes + tail:
        return None
    signed = prefixes[1] + signed_head + tail
    did = container_did_for(signed)
    if container_did != did:
        return None
    return hmp, head, signed, did, key, has_float


def _head_plan(head: dict) -> tuple | None:
    """For a head key list: ``(checks, combined)``, the (name, check) pairs of the fields beyond
    the required ones (an unknown field's check passes: check_tree walks it) and whether any of
    them excludes another. None when a required field is missing or the order is not canonical."""
    names = list(head)
    if not _REQUIRED <= head.keys():
        return None
    check_keys(names)  # raises unless the keys are text in canonical order
    fields = schema.HEAD.fields
    checks = tuple((n, fields[n][0] if n in fields else schema.anything) for n in names if n not in _REQUIRED)
    plan = (checks, not COMBINED_FIELDS.isdisjoint(names))
    if len(_PLANS) >= _PLANS_MAX:
        _PLANS.clear()  # bounded: a peer sending ever-new head layouts only costs the slow path
    if sum(map(len, names)) <= 512:
        _PLANS[tuple(names)] = plan
    return plan


def _check_fixed(head: dict) -> tuple[bytes, HeadTemplate]:
    """Check the eight fixed head fields as verify.py's full checks do; remember
    ``(the sender's key, their encodings)``."""
    schema.HEAD.validate_fields(head, FIXED_FIELDS, "bad_structure", "bad_field")
    if head["version"] != CONTAINER_VERSION or head["sig_algo"] != SIG_ALGO:
        raise ContainerError("unsupported_version", "left to the full checks")
    _check_class_names(head["class"], head["class_version"], head["class_id"])
    sender = (sender_key(head["sender_did"]), HeadTemplate({k: head[k] for k in FIXED_FIELDS}))
    if len(_SENDERS) >= _SENDERS_MAX:
        _SENDERS.clear()
    _SENDERS[_fixed(head)] = sender
    return sender
