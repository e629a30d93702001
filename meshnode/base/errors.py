"""The one error family of meshnode.

Every expected failure (bad input from a peer, a file, the command line or an
LLM; a misconfigured home; a refused key file) is a :class:`MeshnodeError`
with a machine-readable ``code`` and a sentence a person can act on. Callers
at the edges (CLI, network handlers) catch this family only; anything else
that escapes is a bug and is allowed to crash loudly.
"""

from __future__ import annotations


class MeshnodeError(Exception):
    """Base of all expected failures: ``code`` for machines, ``reason`` for people."""

    code: str = "error"

    def __init__(self, code: str, reason: str):
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason


class IdentityError(MeshnodeError):
    """A DID, peer id or key that cannot be parsed or does not belong together."""


class KeyFileError(MeshnodeError):
    """The node's key file is missing, unsafe, corrupt, or its passphrase is wrong."""


class ConfigError(MeshnodeError):
    """config.toml, an environment variable or a flag has an unusable value."""


class StoreError(MeshnodeError):
    """The node's database cannot be opened, migrated or written."""


class AdmissionRefused(MeshnodeError):
    """A container a class's own admission rule refused at the store's door (GMP step 8 raises its
    subclass ``gmp.rules.GmpRefused``): nothing of it is stored."""


class SpawnError(MeshnodeError):
    """A spawn refused or failed. Codes: bad_kind, bad_autostart, home_exists, home_too_deep,
    parent_never_ran, no_public_address, too_many_children, too_deep, no_free_port, seed_failed,
    start_failed, not_reachable, not_a_child, bad_bundle, bad_invitation, bad_signature, not_for_us,
    unknown_invitation, invitation_used, invitation_expired, bundle_exists; bad_child_config (the
    parent's values make no loadable child config: a bug, said plainly). Defined here, below the
    spawn: the family's records (meshnode.records.family) refuse with it too."""


class GateError(MeshnodeError):
    """An action the gate refuses (a path outside the jail, a program not allowed,
    a draft in conflict, a missing confirmation), with a reason a person can read. Defined here,
    below the gate: its records (meshnode.records.gate) refuse with it too."""
