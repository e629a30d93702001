"""Structure checks of a container's blocks, shared by the builder and the verifier.

Each raises ContainerError with the code protocols/container.md gives the fault.
"""

from __future__ import annotations

import functools

from meshnode.base.container import schema
from meshnode.base.container.errors import ContainerError
from meshnode.base.container.model import CONTAINER_VERSION, SIG_ALGO
from meshnode.base.errors import IdentityError
from meshnode.base.identity.did import public_key_from_did

_RELATED_ITEM = schema.list_of(schema.did, max_items=1024, non_empty=True)


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
    """The head's values beyond their types (which schema.HEAD checks), and their fit to the payload."""
    if head["version"] != CONTAINER_VERSION:
        raise ContainerError("unsupported_version", f"container version {head['version']!r}; meshnode speaks {CONTAINER_VERSION}")
    if head["sig_algo"] != SIG_ALGO:
        raise ContainerError("unsupported_algorithm", f"sig_algo {head['sig_algo']!r}; only {SIG_ALGO} is accepted")
    _check_class_names(head["class"], head["class_version"], head["class_id"])
    payload_is_bytes = payload_type_is_bytes(head["payload_type"])
    if payload_is_bytes and type(payload) is not bytes:
        raise ContainerError("bad_structure", f"payload_type {head['payload_type']} needs a byte-string payload")
    if not payload_is_bytes and type(payload) is not dict:
        raise ContainerError("bad_structure", "payload_type cbor needs a map payload")
    check_head_combinations(head)


def payload_type_is_bytes(ptype: str) -> bool:
    """False for ``cbor`` (a map payload), True for ``binary`` and ``encrypted+<format>``."""
    payload_is_bytes = ptype == "binary" or (ptype.startswith("encrypted+") and len(ptype) > 10)
    if ptype != "cbor" and not payload_is_bytes:
        raise ContainerError("bad_field", f"payload_type {ptype!r}: use cbor, binary or encrypted+<format>")
    return payload_is_bytes


# the optional head fields that check_head_combinations looks at
COMBINED_FIELDS = frozenset({"network", "broadcast", "group_recipient", "recipient", "key_recipient"})


def check_head_combinations(head: dict) -> None:
    """Optional head fields that exclude each other."""
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


def sender_key(sender_did: str) -> bytes:
    """The Ed25519 public key named by ``head.sender_did`` (ContainerError bad_sender if none)."""
    try:
        return public_key_from_did(sender_did)
    except IdentityError as exc:
        raise ContainerError("bad_sender", exc.reason) from None
