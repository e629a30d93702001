"""``[cognition]``: the REPL cycle (on or off, its pause, what each tick sees) and the peers that
validate its answers."""

from __future__ import annotations

from typing import Any

from meshnode.base.errors import ConfigError

DEFAULTS: dict[str, Any] = {"enabled": True, "pause_seconds": 5.0, "recent_responses": 5, "peer_validators": 3,
                            "peer_validation_min_trust": 0.7, "peer_validation_seconds": 60.0,
                            "validator_failures": 3, "validator_retry_seconds": 300.0, "keep_tick_traces": 200}
NOTE = ("the REPL cycle: on or off, the pause between ticks, how many own responses each tick sees,"
        " how many trusted peers (friends, or trust >= min) validate its answers, and after how many"
        " failures in a row a validator is set aside (asked again after validator_retry_seconds)")


def check(cognition: dict) -> None:
    if not 0.05 <= cognition["pause_seconds"] <= 86400:
        raise ConfigError("bad_config", "cognition.pause_seconds must be between 0.05 and 86400")
    if not 0 <= cognition["recent_responses"] <= 100:
        raise ConfigError("bad_config", "cognition.recent_responses must be between 0 and 100")
    if not 0 <= cognition["peer_validators"] <= 16:
        raise ConfigError("bad_config", "cognition.peer_validators must be between 0 and 16")
    if not 0 <= cognition["peer_validation_min_trust"] <= 1:
        raise ConfigError("bad_config", "cognition.peer_validation_min_trust must be between 0 and 1")
    if not 1 <= cognition["peer_validation_seconds"] <= 600:
        raise ConfigError("bad_config", "cognition.peer_validation_seconds must be between 1 and 600")
    if not 1 <= cognition["validator_failures"] <= 1000 or not 1 <= cognition["validator_retry_seconds"] <= 86400:
        raise ConfigError("bad_config", "cognition.validator_failures must be 1..1000 and"
                          " cognition.validator_retry_seconds 1..86400")
    if not 1 <= cognition["keep_tick_traces"] <= 100_000:
        raise ConfigError("bad_config", "cognition.keep_tick_traces must be between 1 and 100000")
