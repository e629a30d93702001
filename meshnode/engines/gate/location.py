"""Where a path lies in the jail, placed lexically (before any access): a root and the components below it.

Shared by the jail, which places paths and walks them, and ``atomic_write``, whose steps name their
targets by it; pure data, no I/O.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Location:
    """A lexically placed path: which root, the components below it, and its key
    (workspace-relative for the workspace, absolute for the other roots)."""

    root: int
    base: str  # "" for the workspace, else the root's path (for display)
    parts: tuple[str, ...]

    @property
    def key(self) -> str:
        return self.shown(len(self.parts))

    def shown(self, depth: int) -> str:
        """The path of the first ``depth`` components, as a person should see it."""
        head = self.parts[:depth]
        if self.base:
            return os.path.join(self.base, *head)
        return "/".join(head) or "."
