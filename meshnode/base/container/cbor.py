"""Deterministic CBOR for meshnode: one encoder, one strict decoder.

Theory of operation
-------------------
Signatures and content DIDs are computed over exact bytes, so one logical value
must have exactly one encoding: RFC 8949 section 4.2.1 (shortest integer,
length and float forms, definite lengths only, map keys sorted bytewise by
their encoded form). On top of that meshnode allows only a JSON-like subset:
maps with text keys, arrays, text, bytes, integers within 64 bits, floats,
booleans and null. No tags, no ``undefined``, no other simple values.

The decoder is strict: input is size-limited, pre-scanned so that its item
count and nesting are bounded before any real work (``prescan``), decoded by
cbor2's C decoder with duplicate keys, indefinite lengths and deep nesting
refused, walked once to refuse forbidden types and unsorted keys, then
re-encoded and compared byte for byte with the input. Anything that differs is
``non_deterministic``.

Speed note: cbor2's canonical mode sorts every map on every call and costs
about five times its plain mode. A decoded dict keeps the wire's key order, and
the walk has already checked that order, so for values without floats the plain
encoder already yields the canonical bytes; floats (whose shortest form the
plain encoder does not pick) take the canonical path. Tests check both paths
against each other.
"""

from __future__ import annotations

from typing import Any

import cbor2

from meshnode.base.container.errors import ContainerError
from meshnode.base.container.prescan import scan

HARD_MAX_DEPTH = 256  # the most any configuration allows (config/limits.py checks the same bound)
_INT_MIN = -(2**64)
_INT_MAX = 2**64 - 1
_SCALARS = (str, bytes, bool, type(None))


def key_order(key: str) -> tuple[int, bytes]:
    """Sort key giving RFC 8949 4.2.1 order for text keys (length first, then bytes)."""
    raw = _utf8(key)
    return (len(raw), raw)


def _utf8(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: not text CBOR can carry
        raise ContainerError("forbidden_type", "text that is not valid Unicode (a lone surrogate)") from None


def canonicalize(value: Any, max_depth: int = HARD_MAX_DEPTH, depth: int = 0) -> tuple[Any, bool]:
    """Return ``(copy with every map's keys in canonical order, has_float)``.

    ``depth`` is how many arrays and maps already enclose ``value``; no item
    may end up inside more than ``max_depth`` of them (the decoder's rule).
    Raises ContainerError(forbidden_type or too_deep) for anything the decoder
    would refuse.
    """
    t = type(value)
    if t is dict:
        return _canonical_map(value, max_depth, depth)
    if t is list or t is tuple:
        if value and depth >= max_depth:
            raise ContainerError("too_deep", f"nesting deeper than {max_depth}")
        if set(map(type, value)) <= _SIMPLE_LEAVES:  # e.g. a list of tags
            return list(value), False
        out, has_float = [], False
        for x in value:
            x, f = canonicalize(x, max_depth, depth + 1)
            out.append(x)
            has_float = has_float or f
        return out, has_float
    if t is int:
        if not _INT_MIN <= value <= _INT_MAX:
            raise ContainerError("forbidden_type", "integer outside the 64-bit CBOR range")
        return value, False
    if t is float:
        return value, True
    if t is str or t is bytes or t is bool or value is None:
        return value, False
    if t is bytearray:
        return bytes(value), False
    raise ContainerError("forbidden_type", f"value of type {t.__name__} cannot be encoded")


_KEY_ORDERS: dict[tuple, tuple[str, ...]] = {}  # the same few key lists recur: sort each once
_SIMPLE_LEAVES = frozenset({str, bytes, bool, type(None)})
_SIMPLE_OR_INT_OR_LIST = _SIMPLE_LEAVES | {int, list}


def _canonical_map(d: dict, max_depth: int, depth: int) -> tuple[dict, bool]:
    if d and depth >= max_depth:
        raise ContainerError("too_deep", f"nesting deeper than {max_depth}")
    names = tuple(d)
    order = _KEY_ORDERS.get(names)
    if order is None:
        for k in d:
            if type(k) is not str:
                raise ContainerError("forbidden_type", f"map key {k!r} is not a text string")
        order = tuple(sorted(names, key=key_order))
        if len(_KEY_ORDERS) < 4096 and _cacheable(order):
            _KEY_ORDERS[names] = order
    types = set(map(type, d.values()))
    if types <= _SIMPLE_OR_INT_OR_LIST and (list not in types or depth + 1 < max_depth):
        # leaves, and arrays of leaves (tags, DIDs): the usual payload, copied without recursion
        out = {k: d[k] for k in order}
        if types <= _SIMPLE_LEAVES:
            return out, False
        for k, v in out.items():
            if type(v) is int:
                if not _INT_MIN <= v <= _INT_MAX:
                    break
            elif type(v) is list:
                if not set(map(type, v)) <= _SIMPLE_LEAVES:
                    break
                out[k] = list(v)  # a copy, as canonicalize gives
        else:
            return out, False
    out, has_float = {}, False
    for k in order:
        out[k], f = canonicalize(d[k], max_depth, depth + 1)
        has_float = has_float or f
    return out, has_float


def encode(value: Any) -> bytes:
    """Deterministic encoding of any allowed value (maps sorted, shortest forms)."""
    canon, has_float = canonicalize(value)
    return _dump(canon, has_float)


def _dump(canon: Any, has_float: bool) -> bytes:
    """Encode a value whose maps are already in canonical key order."""
    try:
        return cbor2.dumps(canon, canonical=True) if has_float else cbor2.dumps(canon)
    except UnicodeEncodeError:  # a lone surrogate in some text
        raise ContainerError("forbidden_type", "text that is not valid Unicode (a lone surrogate)") from None


def canonical_dumps(value: Any) -> bytes:
    """cbor2's canonical encoder: what a value holding floats needs (see the speed note above)."""
    return cbor2.dumps(value, canonical=True)


_LEAF_TYPES = frozenset({str, int, bytes, bool, float, type(None)})
_PLAIN_LEAVES = frozenset({str, int, bytes, bool, type(None)})  # leaves that need nothing more
_ALLOWED_TYPES = _LEAF_TYPES | {dict, list}
_PLAIN_LEAVES_OR_LIST = _PLAIN_LEAVES | {list}


def check_tree(value: Any) -> bool:
    """Walk a decoded value: allowed types only, canonical key order. Returns has_float.

    Written for speed (it runs on every received container): type sets and key
    order are checked with C-level builtins per map or array, not per item, and
    the key order of each distinct key list is checked once and remembered.
    Nesting depth is not checked here: cbor2 enforces it while decoding.
    """
    t = type(value)
    if t is dict:  # most maps (a payload, meta) hold leaves and arrays of leaves: no walk needed
        if tuple(value) not in _GOOD_KEY_ORDERS:
            check_keys(list(value))
        types = set(map(type, value.values()))
        if types <= _PLAIN_LEAVES:
            return False
        if types <= _PLAIN_LEAVES_OR_LIST:
            for x in value.values():
                if type(x) is list and not set(map(type, x)) <= _PLAIN_LEAVES:
                    break
            else:
                return False
    elif t is not list:
        if t not in _LEAF_TYPES:
            raise ContainerError("forbidden_type", f"value of type {t.__name__} is not allowed")
        return t is float
    has_float = False
    stack = [value]
    pop, push, good_orders = stack.pop, stack.append, _GOOD_KEY_ORDERS
    while stack:
        v = pop()
        if type(v) is dict:
            if tuple(v) not in good_orders:
                check_keys(list(v))
            items = v.values()
        else:
            items = v
        types = set(map(type, items))
        if types <= _PLAIN_LEAVES:
            continue
        if not types <= _ALLOWED_TYPES:
            bad = next(iter(types - _ALLOWED_TYPES))
            raise ContainerError("forbidden_type", f"value of type {bad.__name__} is not allowed")
        if float in types:
            has_float = True
        if dict in types or list in types:
            for x in filter(None, items):  # an empty array or map holds nothing to check
                if type(x) is dict or type(x) is list:
                    push(x)
    return has_float


_GOOD_KEY_ORDERS: dict[tuple, bool] = {}  # the same few key lists recur in every container
_GOOD_KEY_ORDERS_MAX = 4096


def check_keys(keys: list) -> None:
    """Text keys only, in canonical order: by encoded length, then bytewise."""
    try:
        ascii_only = "".join(keys).isascii()
    except TypeError:
        raise ContainerError("forbidden_type", "map keys must be text strings") from None
    if len(keys) >= 2:
        if ascii_only:  # code-point order is byte order, and length is byte length
            in_order = keys == sorted(sorted(keys), key=len)
        else:
            in_order = keys == sorted(keys, key=key_order)
        if not in_order:
            raise ContainerError("non_deterministic", "map keys are not in canonical (length, then bytewise) order")
    if not _cacheable(keys):
        return
    if len(_GOOD_KEY_ORDERS) >= _GOOD_KEY_ORDERS_MAX:
        _GOOD_KEY_ORDERS.clear()  # bounded: a peer sending ever-new key sets only costs the slow path
    _GOOD_KEY_ORDERS[tuple(keys)] = True


def _cacheable(keys) -> bool:
    """Remember only small key lists: the caches fill before any signature is checked,
    so what a peer can make them hold must stay small (4096 x 32 keys x 512 characters)."""
    return len(keys) <= 32 and sum(map(len, keys)) <= 512


def decode(data: bytes, *, max_bytes: int, max_depth: int, max_items: int | None = None) -> tuple[Any, bool]:
    """Strictly decode one deterministic CBOR item. Returns ``(value, has_float)``.

    Raises only ContainerError, whatever the input. ``max_depth``: no item may
    sit inside more than this many arrays and maps. ``max_items``: the most
    data items (arrays, maps, keys, values, scalars) the item may hold; None
    leaves only the size limit (every item takes at least one byte).
    """
    value, has_float = decode_tree(data, max_bytes=max_bytes, max_depth=max_depth, max_items=max_items)
    check_encoding(value, has_float, data)
    return value, has_float


def as_bytes(data: object) -> bytes:
    """Plain bytes from bytes, bytearray or memoryview (one copy); ContainerError otherwise."""
    if type(data) is bytes:
        return data
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise ContainerError("malformed_cbor", "input is not bytes")
    return bytes(data)


def decode_tree(data: bytes, *, max_bytes: int, max_depth: int, max_items: int | None = None,
                walk: bool = True) -> tuple[Any, bool]:
    """Decode and walk, but leave the byte-for-byte comparison to the caller.

    The container verifier compares the input with bytes it assembles anyway
    (see :func:`encode_hmp`), which saves a second full encoding. With
    ``walk=False`` the type and key-order walk is left to the caller too (who
    must then call :func:`check_tree` on every part it does not otherwise
    compare byte for byte). Anyone else wants :func:`decode`.
    """
    data = as_bytes(data)
    if len(data) > max_bytes:
        raise ContainerError("too_large", f"{len(data)} bytes, the limit is {max_bytes}")
    if not data:
        raise ContainerError("malformed_cbor", "empty input")
    if max_items is not None and len(data) > max_items:  # shorter input cannot hold more items than bytes
        scan(data, max_items, max_depth)  # cost bounded by max_items; refuses before cbor2 does any work
    try:
        value = cbor2.loads(
            data,
            allow_indefinite=False,
            allow_duplicate_keys=False,
            max_depth=max_depth,
            tag_hook=_refuse_tag,
            semantic_decoders=_REFUSE_SEMANTIC_TAGS,
            strict_hashable_types=True,
        )
    except ContainerError:
        raise
    except RecursionError:
        raise ContainerError("too_deep", f"nesting deeper than {max_depth}") from None
    except Exception as exc:  # cbor2 raises several types (ValueError, OverflowError, ...)
        raise _classify(exc) from None
    return value, (check_tree(value) if walk else False)


def check_encoding(value: Any, has_float: bool, data: bytes, expected: bytes | None = None) -> None:
    """Raise unless ``data`` is the deterministic encoding of ``value`` (``expected``, if known)."""
    if expected is None:
        expected = _dump(value, has_float)
    if expected != data:
        if len(expected) < len(data) and data.startswith(expected):
            raise ContainerError("malformed_cbor", "trailing bytes after the CBOR item")
        raise ContainerError("non_deterministic", "not the shortest/deterministic encoding of its value")


# --- the hmp_container map, assembled from its parts ------------------------------
#
# The verifier needs the bytes of the payload (for its hash), of the signed map
# (head without its two derived fields) and of the whole map (to compare with
# the input); the builder needs the same three. A canonical map's encoding is
# its header followed by each key and value in order, so all three can share
# the encodings of meta, payload and related instead of encoding the payload
# three times. The keys are fixed: "head", "meta" (4 bytes), "payload",
# "related" (7 bytes), already in canonical order.

HMP_KEYS = frozenset({"head", "meta", "payload", "related"})
_K_HEAD, _K_META, _K_PAYLOAD, _K_RELATED = (cbor2.dumps(k) for k in ("head", "meta", "payload", "related"))
ENVELOPE_PREFIX = cbor2.dumps({"hmp_container": 0})[:-1]  # map of 1, "hmp_container"; the value follows
_HMP_HEADERS = {count: bytes((0xA0 + count,)) + _K_HEAD for count in range(1, 24)}  # map header and "head"


def encode_tail(meta: bytes | None, payload: bytes, related: bytes | None) -> bytes:
    """The encoded entries after "head", given the encodings of the values present."""
    tail = b""
    if meta is not None:
        tail += _K_META + meta
    tail += _K_PAYLOAD + payload
    if related is not None:
        tail += _K_RELATED + related
    return tail


def encode_hmp(head: bytes, tail: bytes, count: int) -> bytes:
    """The encoding of an hmp_container map of ``count`` keys: header, "head", head, tail."""
    return _HMP_HEADERS[count] + head + tail


def _refuse_tag(decoder: Any, tag: Any) -> Any:
    raise ContainerError("forbidden_type", f"CBOR tag {tag.tag} is not allowed")


def _refuse_semantic_tag(decoder: Any) -> Any:
    raise ValueError("CBOR tags are not allowed")


# cbor2 decodes well-known tags (dates, bignums, shared values, sets, ...)
# itself before tag_hook sees them; override every tag it may know.
_REFUSE_SEMANTIC_TAGS = {t: _refuse_semantic_tag for t in [*range(0, 1100), 1004, 25441, 55799, 55800, 55801]}


# Not well-formed CBOR (RFC 8949 section 3 and appendix F): the reserved additional
# information values 28 to 30 in any major type, and 31 (indefinite length) in major
# types 0, 1 and 6. cbor2 names the major type it was decoding in its message.
_RESERVED_INFO = ("unknown unsigned integer subtype", "reserved major type 7 subtype", "invalid two-byte sequence")
_NO_INDEFINITE_FORM = ("decoding unsigned integer", "decoding negative integer", "decoding semantic tag")


def _classify(exc: Exception) -> ContainerError:
    text = str(exc)
    lowered = text.lower()
    if "duplicate" in lowered:
        return ContainerError("duplicate_key", text[:200])
    if any(m in lowered for m in _RESERVED_INFO):
        return ContainerError("malformed_cbor", f"not well-formed (a reserved encoding): {text[:160]}")
    if "indefinite" in lowered:
        if any(m in lowered for m in _NO_INDEFINITE_FORM):
            return ContainerError("malformed_cbor", f"no indefinite form in this major type: {text[:160]}")
        return ContainerError("non_deterministic", "indefinite-length item: " + text[:160])
    if "depth" in lowered:
        return ContainerError("too_deep", text[:200])
    if "tag" in lowered:
        return ContainerError("forbidden_type", text[:200])
    if "hashable" in lowered or "map key" in lowered:
        return ContainerError("forbidden_type", text[:200])
    return ContainerError("malformed_cbor", f"{type(exc).__name__}: {text[:200]}")
