"""A cheap local novelty measure for the anti-stagnation reflex (seed 000, step 5). Pure.

A response becomes a set of *shingles* (overlapping 3-word windows of its
normalised words). Two responses are as similar as the Jaccard index of their
shingle sets; a new response is as novel as one minus its similarity to the
closest recent response. Exact Jaccard is cheap for one pair; for comparing
against many stored responses a *MinHash* signature (128 minima of salted
64-bit hashes) estimates it from a fixed 1 KiB per response, with a standard
error of about 1/sqrt(128) ≈ 0.09.
"""

from __future__ import annotations

import hashlib
import re
from typing import Iterable

SHINGLE_WORDS = 3
SIGNATURE_SIZE = 128
_WORD = re.compile(r"\w+", re.UNICODE)
_SALTS = [hashlib.blake2b(i.to_bytes(2, "big"), digest_size=8).digest() for i in range(SIGNATURE_SIZE)]


def shingles(text: str, size: int = SHINGLE_WORDS) -> set[str]:
    words = [w.lower() for w in _WORD.findall(text)]
    if len(words) < size:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i: i + size]) for i in range(len(words) - size + 1)}


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def signature(text: str) -> tuple[int, ...]:
    """MinHash: per salt, the smallest 64-bit hash over the shingles (all ones for an empty text)."""
    items = [s.encode("utf-8") for s in shingles(text)]
    if not items:
        return (2**64 - 1,) * SIGNATURE_SIZE
    return tuple(min(int.from_bytes(hashlib.blake2b(item, digest_size=8, key=salt).digest(), "big")
                     for item in items) for salt in _SALTS)


def estimated_similarity(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    return sum(x == y for x, y in zip(a, b)) / len(a)


def novelty(text: str, recent: Iterable[str]) -> float:
    """1 - the largest exact shingle similarity to any recent response (1.0 with none)."""
    mine = shingles(text)
    return 1.0 - max((jaccard(mine, shingles(r)) for r in recent), default=0.0)
