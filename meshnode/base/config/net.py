"""``[net]``: libp2p's listen and announced addresses, the bootstrap file, heartbeats and liveness
thresholds, the connection cap. Addresses are checked item by item as they are read (``ITEM_CHECKS``),
the common ``/ip4|ip6/ADDRESS/tcp/PORT`` without loading multiaddr."""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from meshnode.base.errors import ConfigError

DEFAULTS: dict[str, Any] = {
    "listen": ["/ip4/0.0.0.0/tcp/7822"],
    "announce": [],
    "bootstrap": "bootstrap.txt",
    "heartbeat_seconds": 10.0,
    "gossip_heartbeat_seconds": 1.0,
    "sync_seconds": 30.0,
    "reputation_seconds": 60.0,
    "reputation_first_seconds": 10.0,
    "quiet_after_seconds": 25.0,
    "stale_after_seconds": 60.0,
    "dead_after_seconds": 300.0,
    "max_connections": 300,
    "interests": [],
    "expertise": [],
    "roles": [],
}
NOTE = ("libp2p: listen/announce multiaddrs, bootstrap file, heartbeats and liveness thresholds,"
        " connections at most (about five sixths of them inbound)")


def check(net: dict) -> None:
    for key in ("listen", "announce", "interests", "expertise", "roles"):
        if not all(isinstance(item, str) and 0 < len(item) <= 256 for item in net[key]) or len(net[key]) > 64:
            raise ConfigError("bad_config", f"net.{key} must be a list of at most 64 short strings")
    if not net["listen"]:
        raise ConfigError("bad_config", "net.listen needs at least one address")
    if not 0.2 <= net["sync_seconds"] <= 86400:
        raise ConfigError("bad_config", "net.sync_seconds must be between 0.2 and 86400")
    if not 1 <= net["reputation_seconds"] <= 86400:
        raise ConfigError("bad_config", "net.reputation_seconds must be between 1 and 86400")
    if not 0.1 <= net["reputation_first_seconds"] <= net["reputation_seconds"]:
        raise ConfigError("bad_config", "net.reputation_first_seconds must be from 0.1 to net.reputation_seconds")
    if not 0.1 <= net["gossip_heartbeat_seconds"] <= 60:
        raise ConfigError("bad_config", "net.gossip_heartbeat_seconds must be between 0.1 and 60")
    if not 0.05 <= net["heartbeat_seconds"] <= 3600:
        raise ConfigError("bad_config", "net.heartbeat_seconds must be between 0.05 and 3600")
    if not 0 < net["quiet_after_seconds"] < net["stale_after_seconds"] < net["dead_after_seconds"]:
        raise ConfigError("bad_config", "liveness thresholds must grow, all positive: net.quiet_after_seconds <"
                                        " net.stale_after_seconds < net.dead_after_seconds")
    if not 12 <= net["max_connections"] <= 100_000:  # a whole number (checked as it was read)
        raise ConfigError("bad_config", "net.max_connections must be between 12 and 100000")


_IP_TCP = re.compile(r"/(ip4|ip6)/([0-9a-f.:]+)/tcp/(0|[1-9][0-9]{0,4})")


def plain_ip_tcp(text: str) -> bool:
    """Whether ``text`` is ``/ip4/ADDRESS/tcp/PORT`` or ``/ip6/ADDRESS/tcp/PORT`` with the address in
    its canonical form and the port in range: a subset of what multiaddr parses as those two
    protocols, checked without loading multiaddr (and netaddr, which its ip4 and ip6 codecs load).
    Anything else is left to multiaddr, whose reasons the errors quote."""
    match = _IP_TCP.fullmatch(text)
    if match is None or int(match[3]) > 65535:
        return False
    kind = ipaddress.IPv4Address if match[1] == "ip4" else ipaddress.IPv6Address
    try:
        return str(kind(match[2])) == match[2]
    except ValueError:
        return False


def _protocols(text: str) -> list[str]:
    """The protocol names of the multiaddr ``text`` (ValueError or TypeError: not one)."""
    import multiaddr

    return [p.name for p in multiaddr.Multiaddr(text).protocols()]


def _listen_address(text: str) -> str | None:
    """Why ``text`` is not an address this node can listen on (None when it is one)."""
    if plain_ip_tcp(text):
        return None
    try:
        protocols = _protocols(text)
    except (ValueError, TypeError) as exc:  # multiaddr's parse errors are ValueErrors
        return _parse_problem(exc)
    if protocols[:1] not in (["ip4"], ["ip6"]) or protocols[1:] != ["tcp"]:
        return "a listen address is /ip4/ADDRESS/tcp/PORT or /ip6/ADDRESS/tcp/PORT"
    return None


def _announce_address(text: str) -> str | None:
    if plain_ip_tcp(text):
        return None
    try:
        protocols = _protocols(text)
    except (ValueError, TypeError) as exc:
        return _parse_problem(exc)
    if "tcp" not in protocols:
        return "an announced address names a TCP port, e.g. /dns4/node.example.org/tcp/7822"
    return None


def _parse_problem(exc: Exception) -> str:
    """multiaddr's reason without the repeated address: "base address '1.2.3' is not IPv4"."""
    text = str(exc).split(" (string:")[0]
    return text.split("': ", 1)[1] if text.startswith("Invalid MultiAddr '") and "': " in text else text


ITEM_CHECKS = {"listen": _listen_address, "announce": _announce_address}  # key -> why an item is wrong
