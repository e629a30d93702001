"""``[peers]``: per-peer limits under attack (frames, message rate, outstanding requests, the cut-off
after invalid input), CPU budgets per peer, address and subnet, the decoding pool and sync sessions,
and what all strangers together may take (protocols/mesh.md, Limits under attack)."""

from __future__ import annotations

from typing import Any, Mapping

from meshnode.base.errors import ConfigError

DEFAULTS: dict[str, Any] = {
    "max_frame_bytes": 1024 * 1024,
    "messages_per_second": 50.0,
    "burst": 100,
    "max_outstanding": 8,
    "invalid_threshold": 20,
    "ban_seconds": 600.0,
    "max_records": 4096,
    "cpu_ms_per_second": 100.0,
    "cpu_burst_ms": 2000.0,
    "known_factor": 10.0,
    "address_factor": 4.0,
    "subnet_factor": 8.0,
    "connections_per_minute": 60.0,
    "address_abuse": 30,
    "address_abuse_window_seconds": 60.0,
    "address_ban_seconds": 30.0,
    "address_ban_renew_factor": 4.0,
    "address_streams": 32,
    "decode_workers": 2,
    "decode_queue": 64,
    "inline_bytes": 8192,
    "frame_timeout_seconds": 10.0,
    "sync_sessions": 8,
    "sync_sessions_per_peer": 2,
    "strangers_cpu_ms_per_second": 150.0,
    "strangers_cpu_burst_ms": 2000.0,
    "strangers_connections": 64,
    "strangers_streams": 64,
    "strangers_idle_seconds": 30.0,
    "new_peers_per_second": 2.0,
    "new_peers_burst": 30,
    "stranger_handshakes_per_second": 4.0,
    "stranger_handshakes_burst": 16,
    "early_pushes_tolerated": 1,
    "early_push_weight": 5.0,
    "stranger_stream_opens_per_second": 4.0,
    "stranger_stream_opens_burst": 32,
    "strangers_stream_opens_per_second": 16.0,
    "strangers_stream_opens_burst": 64,
}
NOTE = ("per-peer limits: frames, message rate, outstanding requests, cut-off after invalid input (weighed"
        " by its cost); CPU budgets per peer, address and subnet; connections per address and the address ban"
        " for handshake-level abuse; the decoding worker pool; sync sessions and frame timeout; all strangers"
        " together: their CPU budget, connections (at most half of [net] max_connections), streams and new"
        " identities a second; strangers pushing again before the hint they were given (see protocols/mesh.md,"
        " Limits under attack)")


def check(peers: Mapping[str, Any]) -> None:
    if not 1024 <= peers["max_frame_bytes"] <= 16 * 1024 * 1024:
        raise ConfigError("bad_config", "peers.max_frame_bytes must be between 1 KiB and 16 MiB")
    for key in ("messages_per_second", "burst", "max_outstanding", "invalid_threshold", "ban_seconds"):
        if peers[key] <= 0:
            raise ConfigError("bad_config", f"peers.{key} must be positive")
    _check_load_limits(peers)


_LOAD_RANGES = {  # the settings of the limits under attack: (lowest, highest)
    "max_records": (64, 1_000_000), "cpu_ms_per_second": (1.0, 1000.0), "cpu_burst_ms": (10.0, 600_000.0),
    "known_factor": (1.0, 1000.0), "address_factor": (1.0, 1000.0), "subnet_factor": (1.0, 1000.0),
    "connections_per_minute": (1.0, 100_000.0), "address_abuse": (1, 100_000),
    "address_abuse_window_seconds": (1.0, 3600.0), "address_ban_seconds": (1.0, 86_400.0),
    "address_ban_renew_factor": (1.0, 1000.0),
    "address_streams": (1, 10_000),
    "decode_workers": (1, 64), "decode_queue": (1, 100_000), "inline_bytes": (0, 1024 * 1024),
    "frame_timeout_seconds": (0.5, 600.0), "sync_sessions": (1, 1000), "sync_sessions_per_peer": (1, 100),
    "strangers_cpu_ms_per_second": (1.0, 1000.0), "strangers_cpu_burst_ms": (10.0, 600_000.0),
    "strangers_connections": (1, 100_000), "strangers_streams": (1, 100_000), "strangers_idle_seconds": (1.0, 86_400.0),
    "new_peers_per_second": (0.01, 10_000.0), "new_peers_burst": (1, 100_000),
    "stranger_handshakes_per_second": (0.01, 10_000.0), "stranger_handshakes_burst": (1, 100_000),
    "early_pushes_tolerated": (0, 1000), "early_push_weight": (1.0, 1_000_000.0),
    "stranger_stream_opens_per_second": (0.01, 10_000.0), "stranger_stream_opens_burst": (1, 100_000),
    "strangers_stream_opens_per_second": (0.01, 100_000.0), "strangers_stream_opens_burst": (1, 1_000_000),
}


def _check_load_limits(peers: Mapping[str, Any]) -> None:
    for key, (lo, hi) in _LOAD_RANGES.items():
        if not lo <= peers[key] <= hi:
            raise ConfigError("bad_config", f"peers.{key} must be between {lo} and {hi}")
    if peers["sync_sessions_per_peer"] > peers["sync_sessions"]:
        raise ConfigError("bad_config", "peers.sync_sessions_per_peer must not exceed peers.sync_sessions")
