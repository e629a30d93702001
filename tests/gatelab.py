"""Helpers for the gate tests: a test clock and a hash of a tree (to show nothing outside a
workspace changed). The ``lab`` fixture is in conftest.py."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


CLOCK = {"now": 1_800_000_000_000}


def clock() -> int:
    return CLOCK["now"]


def tree_hashes(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            out[str(path)] = "link:" + os.readlink(path)
        elif path.is_file():
            out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            out[str(path)] = "dir"
    return out
