"""Format 2 of sync reconciliation: what a message may hold, checked before anything is done with it.

Every value from the peer passes through here and comes out typed and within
limits, or raises :class:`ReconcileError` with a readable reason. The meaning
of the fields is in ``rbsr`` and ``protocols/cogsync.md`` section 4.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from meshnode.domain.sync.hash_index import BITS
from meshnode.domain.sync.reconcile import ReconcileError

ID = 32
CHECK = 16
MAX_FP = 16  # fingerprint bytes (a restart uses these)
MAX_SPLIT_BITS = 8  # at most 256 children a split
MAX_UNITS = 1 << 17  # split ranges described in one message
MAX_CHILDREN = 1 << 20  # fingerprints in one message
MAX_IDS = 1 << 18  # ids listed in one message (8 MiB)
MAX_COUNT = 1 << 63
KEYS = frozenset({"f", "a", "r", "e"})


class Unit(NamedTuple):
    """A range the sender split: its children's fingerprints, and perhaps its (count, sum)."""

    depth: int
    prefix: int
    bits: int
    fps: bytes
    total: tuple[int, int, int | None] | None  # count, sum, check (``hash_index``)


class Limits:
    """What one message has used of the limits so far."""

    def __init__(self) -> None:
        self.units = self.children = self.ids = 0

    def add_unit(self, unit: Unit) -> None:
        self.units += 1
        self.children += 1 << unit.bits
        if self.units > MAX_UNITS or self.children > MAX_CHILDREN:
            raise ReconcileError(f"at most {MAX_UNITS} split ranges and {MAX_CHILDREN} fingerprints a message")

    def add_ids(self, n: int) -> None:
        self.ids += n
        if self.ids > MAX_IDS:
            raise ReconcileError(f"at most {MAX_IDS} ids a message")


def check_message(data: Any) -> dict:
    if type(data) is not dict or not set(data) <= KEYS or "r" not in data:
        raise ReconcileError("a format 2 message is a map with 'r' and perhaps 'f', 'a', 'e'")
    if type(data["r"]) is not list or len(data["r"]) > MAX_UNITS:
        raise ReconcileError(f"'r' is a list of at most {MAX_UNITS} answers")
    if "f" in data and (type(data["f"]) is not int or not 1 <= data["f"] <= MAX_FP):
        raise ReconcileError(f"'f' (fingerprint bytes) is 1 to {MAX_FP}")
    if "a" in data and data["a"] != 2:
        raise ReconcileError("'a' (attempt) is 2: a pass restarts at most once")
    return data


def check_final(e: Any) -> tuple[int, int]:
    if type(e) is not list or len(e) != 2 or type(e[0]) is not int or not -MAX_COUNT < e[0] < MAX_COUNT \
            or type(e[1]) is not bytes or len(e[1]) != ID:
        raise ReconcileError("'e' is [count, 32-byte sum]")
    return e[0], int.from_bytes(e[1])


def check_ids(data: bytes, depth: int, prefix: int, limits: Limits) -> list[int]:
    """Ids listed for a range: whole 32-byte ids, strictly increasing, all inside the range."""
    if len(data) % ID:
        raise ReconcileError("ids are listed as one byte string of 32-byte ids")
    limits.add_ids(len(data) // ID)
    ints = [int.from_bytes(data[i:i + ID]) for i in range(0, len(data), ID)]
    shift = BITS - depth
    for i, x in enumerate(ints):
        if (i and ints[i - 1] >= x) or (depth and x >> shift != prefix):
            raise ReconcileError("listed ids must increase and lie in their range")
    return ints


def check_unit(data: Any, depth: int, prefix: int, fp_len: int, limits: Limits) -> Unit:
    """A split description: [bits, fingerprints], perhaps followed by count, 32-byte sum, 16-byte check."""
    if type(data) is not list or len(data) not in (2, 4, 5) or type(data[0]) is not int \
            or type(data[1]) is not bytes:
        raise ReconcileError("a split is [bits, fingerprints, ? count, sum, ? check]")
    bits, fps = data[0], data[1]
    if not 1 <= bits <= min(MAX_SPLIT_BITS, BITS - depth):
        raise ReconcileError(f"a split has 1 to {MAX_SPLIT_BITS} bits, and no range is deeper than {BITS} bits")
    if len(fps) != fp_len << bits:
        raise ReconcileError(f"a split into {1 << bits} holds {1 << bits} fingerprints of {fp_len} bytes")
    total = None
    if len(data) >= 4:
        count, total_sum, check = data[2], data[3], data[4] if len(data) == 5 else None
        if type(count) is not int or not 0 <= count < MAX_COUNT or type(total_sum) is not bytes \
                or len(total_sum) != ID or (check is not None and (type(check) is not bytes or len(check) != CHECK)):
            raise ReconcileError("a split's count is an integer, its sum 32 bytes and its check 16")
        total = (count, int.from_bytes(total_sum), None if check is None else int.from_bytes(check))
    unit = Unit(depth, prefix, bits, fps, total)
    limits.add_unit(unit)
    return unit


def check_open(data: list, bits: int) -> list[tuple[int, Any]]:
    """The children of a split that still differ: [index, answer, index, answer, ...], indexes increasing."""
    if len(data) % 2 or len(data) > 2 << bits:
        raise ReconcileError("an opened split lists [index, answer] pairs, one per child at most")
    pairs = [(data[i], data[i + 1]) for i in range(0, len(data), 2)]
    previous = -1
    for index, _ in pairs:
        if type(index) is not int or not previous < index < 1 << bits:
            raise ReconcileError("child indexes must increase within the split")
        previous = index
    return pairs


def encode_ids(ints: list[int]) -> bytes:
    return b"".join(x.to_bytes(ID) for x in ints)
