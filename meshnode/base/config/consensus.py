"""``[consensus]``: MeshConsensus's genesis committee (validator DIDs, the same list on every node,
each checked as it is read) and its timeouts and block sizes."""

from __future__ import annotations

from typing import Any

from meshnode.base.errors import ConfigError, IdentityError
from meshnode.base.identity.did import public_key_from_did

DEFAULTS: dict[str, Any] = {
    "committee": [],
    "propose_ms": 1000,
    "prevote_ms": 500,
    "precommit_ms": 500,
    "round_delta_ms": 500,
    "resend_ms": 2000,
    "emergency_seconds": 30.0,
    "block_values": 256,
    "block_kib": 256,
    "request_batch_ms": 50,
}
NOTE = "MeshConsensus: the genesis committee (validator DIDs, the same list on every node) and timeouts"


def check(consensus: dict) -> None:
    if len(consensus["committee"]) > 1000:  # each DID was checked when it was read
        raise ConfigError("bad_config", "consensus.committee is a list of at most 1000 did:key DIDs")
    for key in ("propose_ms", "prevote_ms", "precommit_ms", "round_delta_ms", "resend_ms"):
        if not 10 <= consensus[key] <= 600_000:
            raise ConfigError("bad_config", f"consensus.{key} must be between 10 and 600000")
    if not 1 <= consensus["emergency_seconds"] <= 86400:
        raise ConfigError("bad_config", "consensus.emergency_seconds must be between 1 and 86400")
    if type(consensus["block_values"]) is not int or not 1 <= consensus["block_values"] <= 4096:
        raise ConfigError("bad_config", "consensus.block_values must be a whole number from 1 to 4096")
    if not 0 <= consensus["request_batch_ms"] <= 1000:
        raise ConfigError("bad_config", "consensus.request_batch_ms must be between 0 and 1000")
    if type(consensus["block_kib"]) is not int or not 17 <= consensus["block_kib"] <= 512:
        raise ConfigError("bad_config", "consensus.block_kib must be a whole number from 17 to 512")


def _did(text: str) -> str | None:
    try:
        public_key_from_did(text)
    except IdentityError as exc:
        return exc.reason
    return None


ITEM_CHECKS = {"committee": _did}  # key -> why an item is wrong
