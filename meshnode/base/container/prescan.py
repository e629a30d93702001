"""A structural pre-scan of CBOR input: count items and nesting before decoding.

Why: decoding and checking a CBOR value costs time in proportion to its number
of items, and one byte is an item (``0x80``, an empty array), so a 1 MiB input
can hold a million of them. This scan walks only the item headers (byte and
text contents are skipped by their length), counts every data item (an array,
a map, each key, each value, each scalar) and stops as soon as the count
passes ``max_items`` or the nesting passes ``max_depth``. Its cost is bounded
by ``max_items``, not by the input's size, and it is cheap enough (a fraction
of a microsecond per item) to run before every strict decode and to price an
input before doing the expensive work.

It refuses with the code the full decoder would give for a lone fault of the
same kind: reserved and indefinite-length headers, tags, and input that ends
inside an item. Faults it cannot see (text that is not UTF-8, duplicate keys,
simple values, non-shortest forms, trailing bytes) are left to the decoder,
which always runs after it; on input with several faults the code may name
the first one the scan sees rather than the first one the decoder would.
"""

from __future__ import annotations

from meshnode.base.container.errors import ContainerError

# Additional information 24..27: the argument follows in 1, 2, 4 or 8 bytes.
_ARG_BYTES = {24: 1, 25: 2, 26: 4, 27: 8}


def scan(data: bytes, max_items: int, max_depth: int) -> int:
    """Walk the first CBOR item in ``data``; return how many data items it holds.

    Raises ContainerError: ``too_many_items`` once more than ``max_items``
    items have been seen, ``too_deep`` when an item would sit inside more than
    ``max_depth`` arrays and maps (the decoder's rule), and the decoder's own
    code for truncated input, reserved or indefinite-length headers and tags.
    Bytes after the first item are not looked at (the decoder refuses them).
    """
    end = len(data)
    pos = 0
    count = 0
    remaining = 1  # items still to read at the current level
    stack: list[int] = []  # the enclosing levels' remaining counts
    push, pop = stack.append, stack.pop
    arg_bytes = _ARG_BYTES
    from_bytes = int.from_bytes
    while True:
        if pos >= end:
            raise ContainerError("malformed_cbor", "the input ends inside an item")
        b = data[pos]
        pos += 1
        count += 1
        if count > max_items:
            raise ContainerError("too_many_items", f"more than {max_items} items")
        info = b & 31
        if info < 24:
            arg = info
        else:
            size = arg_bytes.get(info)
            if size is None:
                _bad_header(b)
            arg = from_bytes(data[pos:pos + size], "big")
            pos += size
            if pos > end:
                raise ContainerError("malformed_cbor", "the input ends inside an item header")
            if b == 0xF8 and arg < 32:
                raise ContainerError("malformed_cbor", "not well-formed: a simple value below 32 in two bytes")
        major = b >> 5
        if major == 4 or major == 5:
            if arg:
                if len(stack) >= max_depth:
                    raise ContainerError("too_deep", f"nesting deeper than {max_depth}")
                push(remaining)
                remaining = arg if major == 4 else 2 * arg
                continue
        elif major == 2 or major == 3:
            pos += arg
            if pos > end:
                raise ContainerError("malformed_cbor", "the input ends inside a byte or text string")
        elif major == 6:
            raise ContainerError("forbidden_type", f"CBOR tag {arg} is not allowed")
        # major 0, 1 and 7 (integers, floats, simple values): the header was all of it
        remaining -= 1
        while not remaining:
            if not stack:
                return count
            remaining = pop() - 1


def _bad_header(b: int) -> None:
    """Raise the decoder's code for additional information 28 to 31 in initial byte ``b``."""
    major, info = b >> 5, b & 31
    if info != 31:
        raise ContainerError("malformed_cbor", f"not well-formed (a reserved encoding): initial byte {b:#04x}")
    if major in (0, 1, 6):
        raise ContainerError("malformed_cbor", f"no indefinite form in this major type: initial byte {b:#04x}")
    if major == 7:
        raise ContainerError("malformed_cbor", "a break code outside an indefinite-length item")
    raise ContainerError("non_deterministic", f"indefinite-length item: initial byte {b:#04x}")
