"""The action gate (seed 004): what the cognitive core may do to its host, and how.

Tools carry risk levels; changes to files become drafts that a person reviews;
commits are snapshotted and can be rolled back; every path is confined to the
workspace roots and every command runs without a shell under limits.
"""

from meshnode.base.errors import GateError

__all__ = ["GateError"]  # the gate's refusal (meshnode.base.errors: its records below refuse with it too)
