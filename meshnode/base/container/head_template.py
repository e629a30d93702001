"""The head fields a sender repeats in every container of a class, checked and encoded once.

Of the twelve head fields HMP requires, eight (version, class, class_version,
class_id, schema, sig_algo, sender_did, payload_type) depend only on the
sender, the class and the payload type; four (timestamp, payload_hash,
signature, container_did) change with each container. For a head of just these
twelve, the builder (for its own key) and the verifier (for each sender and
class it has seen, usual.py) keep a :class:`HeadTemplate` holding the eight
fields' encodings, checked once, and encode only the four that change. A
canonical map's encoding is its header followed by each key and value in key
order, and in canonical order (by encoded length, then bytewise) the head is::

    class, schema, version, class_id, sig_algo, [signature], timestamp,
    sender_did, payload_hash, payload_type, class_version, [container_did]

where the two in brackets are left out of the signed bytes. Tests check the
bytes against the generic encoder.
"""

from __future__ import annotations

import cbor2

from meshnode.base.container import cbor, schema
from meshnode.base.container.cbor import key_order
from meshnode.base.container.checks import check_head_values, payload_type_is_bytes
from meshnode.base.container.model import CONTAINER_VERSION, SIG_ALGO

FIXED_FIELDS = ("class", "schema", "version", "class_id", "sig_algo", "sender_did", "payload_type", "class_version")
PER_CONTAINER_FIELDS = ("signature", "timestamp", "payload_hash", "container_did")
CALLER_FIELDS = frozenset({"class", "class_version", "payload_type"})  # checked: the builder makes the rest right
HEAD_ORDER = ("class", "schema", "version", "class_id", "sig_algo", "signature", "timestamp", "sender_did",
              "payload_hash", "payload_type", "class_version", "container_did")  # the usual head, in canonical order
assert list(HEAD_ORDER) == sorted(FIXED_FIELDS + PER_CONTAINER_FIELDS, key=key_order)
_K_SIGNATURE, _K_TIMESTAMP, _K_PAYLOAD_HASH, _K_CONTAINER_DID = (
    cbor2.dumps(k) for k in ("signature", "timestamp", "payload_hash", "container_did"))
_SIGNED_HEADER, _FULL_HEADER = bytes((0xA0 + 10,)), bytes((0xA0 + 12,))  # maps of 10 and 12 entries
_dumps = cbor2.dumps

_TEMPLATES: dict[tuple[str, str, str, str], HeadTemplate] = {}
_TEMPLATES_MAX = 256  # a node signs as itself (and tests as a few keys), in a few dozen classes


def head_template(sender_did: str, cls: str, class_version: str, payload_type: str) -> HeadTemplate:
    """The builder's template for these fields; ContainerError when the verifier would refuse them."""
    names = (sender_did, cls, class_version, payload_type)
    template = _TEMPLATES.get(names)
    if template is None:
        fixed = {"class": cls, "schema": f"meshnode:class/{cls}/{class_version}", "version": CONTAINER_VERSION,
                 "class_id": f"{cls}_v{class_version}", "sig_algo": SIG_ALGO, "sender_did": sender_did,
                 "payload_type": payload_type, "class_version": class_version}
        schema.HEAD.validate_fields(fixed, CALLER_FIELDS, "bad_structure", "bad_field")
        check_head_values(fixed, b"" if payload_type_is_bytes(payload_type) else {})
        template = HeadTemplate(fixed)
        if len(_TEMPLATES) >= _TEMPLATES_MAX:
            _TEMPLATES.clear()
        _TEMPLATES[names] = template
    return template


class HeadTemplate:
    """The encodings of a usual head's eight fixed fields (already checked by the caller)."""

    __slots__ = ("fixed", "payload_type", "_values", "_before", "_sender", "_after")

    def __init__(self, fixed: dict):
        self.fixed = fixed
        self._values = tuple(fixed[k] for k in FIXED_FIELDS)
        self.payload_type = bytes if payload_type_is_bytes(fixed["payload_type"]) else dict
        # each part is the encoding of a small map without its one-byte header (it has under 24 entries)
        self._before = cbor._dump({k: fixed[k] for k in HEAD_ORDER[:5]}, False)[1:]
        self._sender = cbor._dump({"sender_did": fixed["sender_did"]}, False)[1:]
        self._after = cbor._dump({"payload_type": fixed["payload_type"], "class_version": fixed["class_version"]},
                                 False)[1:]

    def encode(self, timestamp: str, payload_hash: str) -> tuple[bytes, bytes]:
        """``(signed_head, middle)``: the encoded head without signature and container_did (what
        the signature covers), and its part between those two (for :meth:`full_bytes`)."""
        middle = b"".join((_K_TIMESTAMP, _dumps(timestamp), self._sender, _K_PAYLOAD_HASH, _dumps(payload_hash),
                           self._after))
        return _SIGNED_HEADER + self._before + middle, middle

    def full_bytes(self, signature: bytes, did: str, middle: bytes) -> bytes:
        """The whole head, encoded (``middle`` from :meth:`encode`)."""
        return b"".join((_FULL_HEADER, self._before, _K_SIGNATURE, _dumps(signature), middle, _K_CONTAINER_DID,
                         _dumps(did)))

    def full_head(self, timestamp: str, payload_hash: str, signature: bytes, did: str) -> dict:
        """The whole head as a map in canonical key order."""
        cls, schema_name, version, class_id, sig_algo, sender_did, payload_type, class_version = self._values
        return {"class": cls, "schema": schema_name, "version": version, "class_id": class_id, "sig_algo": sig_algo,
                "signature": signature, "timestamp": timestamp, "sender_did": sender_did,
                "payload_hash": payload_hash, "payload_type": payload_type, "class_version": class_version,
                "container_did": did}
