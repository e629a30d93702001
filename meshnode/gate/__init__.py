"""The action gate (seed 004): what the cognitive core may do to its host, and how.

Tools carry risk levels; changes to files become drafts that a person reviews;
commits are snapshotted and can be rolled back; every path is confined to the
workspace roots and every command runs without a shell under limits.
"""

from meshnode.errors import MeshnodeError


class GateError(MeshnodeError):
    """An action the gate refuses (a path outside the jail, a program not allowed,
    a draft in conflict, a missing confirmation), with a reason a person can read."""
