"""The ``[a2a]`` section: its defaults, its note in config.toml and the checks of its values (the loader
has type-checked each value against these defaults)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, Mapping

from meshnode.base.errors import ConfigError

A2A_DEFAULTS: dict[str, Any] = {
    "enabled": True,
    "description": "",  # the card's description ("" : one made from the node's name)
    "public_url": "",  # the endpoint's base URL others reach ("" : the URL the card was fetched at)
    "known_tokens_path": "a2a.tokens",  # "name token" lines: the bearer tokens of known parties
    "approve_unknown": True,  # an unknown party's message waits for a person's approval
    "wait_seconds": 30.0,  # how long message/send waits for the agent's reply
    "rate_per_minute": 6.0,  # unknown parties: per client address and per claimed identity
    "burst": 3,
    "known_rate_per_minute": 120.0,  # known parties: per token
    "approval_hours": 6.0,  # a held message nobody approved or rejected expires after this many hours
    "max_text_chars": 8000,  # the longest message delivered to the agent
    "max_body_bytes": 64 * 1024,  # the largest JSON-RPC request (the notebook's own limit is larger)
    "trusted_proxies": [],  # reverse proxies' addresses: their X-Forwarded-For's last hop is the client
    "max_held": 20,  # unknown parties' messages held for approval at once, all parties together
    "held_per_party": 2,  # ... of one unknown party (its address and claimed sender)
    "held_per_address": 3,  # ... from one address (an IPv6 address by its /64)
    "held_per_subnet": 6,  # ... from one /24 (IPv4) or /48 (IPv6)
    "retry_after_minutes": 10.0,  # the longest Retry-After of a message refused for a full queue or share
}
A2A_NOTES = ("other agents (A2A, protocols/a2a.md): the card at /.well-known/agent-card.json and JSON-RPC at /a2a;"
             " known parties carry a bearer token of known_tokens_path (or the web token), an unknown party's"
             " message waits for a person's approval unless approve_unknown = false; rate limits per minute;"
             " held messages: at most max_held, held_per_party, held_per_address, held_per_subnet (/24, /48)"
             " wait at once (past that: HTTP 429, Retry-After at most retry_after_minutes), each expires after"
             " approval_hours")
_RANGES = {"wait_seconds": (0.0, 60.0), "rate_per_minute": (0.1, 6000.0), "burst": (1, 10000),
           "known_rate_per_minute": (0.1, 60000.0), "approval_hours": (0.01, 720.0), "max_text_chars": (1, 100_000),
           "max_body_bytes": (1024, 16 * 1024 * 1024), "max_held": (1, 10000),
           "held_per_party": (1, 10000), "held_per_address": (1, 10000), "held_per_subnet": (1, 10000),
           "retry_after_minutes": (1.0, 1440.0)}


@dataclass(frozen=True)
class A2ASettings:
    enabled: bool
    description: str
    public_url: str
    known_tokens_path: str
    approve_unknown: bool
    wait_seconds: float
    rate_per_minute: float
    burst: int
    known_rate_per_minute: float
    approval_hours: float
    max_text_chars: int
    max_body_bytes: int
    trusted_proxies: list
    max_held: int
    held_per_party: int
    held_per_address: int
    held_per_subnet: int
    retry_after_minutes: float


def a2a_settings(values: Mapping[str, Mapping[str, Any]]) -> A2ASettings:
    """The checked ``[a2a]`` settings (defaults when the section is absent)."""
    section = {**A2A_DEFAULTS, **values.get("a2a", {})}
    for key, (lo, hi) in _RANGES.items():
        if not lo <= section[key] <= hi:
            raise ConfigError("bad_config", f"a2a.{key} must be between {lo:g} and {hi:g}")
    url = section["public_url"]
    if url and not (url.startswith(("http://", "https://")) and url.isprintable() and " " not in url
                    and len(url) <= 500):
        raise ConfigError("bad_config", "a2a.public_url must be an http(s) URL (or empty)")
    for address in section["trusted_proxies"]:
        try:
            ipaddress.ip_address(address)
        except ValueError:
            raise ConfigError("bad_config", f"a2a.trusted_proxies: {str(address)[:100]!r} is not an IP address")
    if len(section["description"]) > 1000:
        raise ConfigError("bad_config", "a2a.description must be at most 1000 characters")
    return A2ASettings(**{k: section[k] for k in A2A_DEFAULTS})
