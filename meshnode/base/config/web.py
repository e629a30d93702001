"""The ``[web]`` settings: defaults and the check at load (protocols/web.md 12).

This module imports nothing of the web server, so loading a config never loads Starlette; the web
server, the CLI and spawn's bundles read the listen address through it, and every face served on that
address (the notebook, /mcp, A2A) takes from here what they share: the Host names a loopback listener
answers to and the security headers of every response.
"""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path
from typing import Any, Mapping

from meshnode.base.errors import ConfigError

DEFAULT_PORT = 8470
WEB_DEFAULTS: dict[str, Any] = {
    "enabled": True,
    "listen": f"127.0.0.1:{DEFAULT_PORT}",
    "allow_remote": False,
    "tls_cert": "",
    "tls_key": "",
    "hosts": [],
    "token_path": "web.token",
    "session_hours": 168.0,
    "wake_on_message": True,
    "feed_ms": 500,
    "max_streams": 16,
    "refused_retry_seconds": 10,  # the Retry-After of a stream refused at max_streams: a tab closes, a slot frees
    "max_body_bytes": 16 * 1024 * 1024,  # a draft edit of gate.drafts.MAX_DRAFT_BYTES (8 MiB) as JSON, escapes too
    "metrics_auth": True,
    # /mcp's sessions (faces/mcp_server/sessions.py): one ends after this long with no request in flight,
    # at most this many are open, and one client (address and User-Agent) holds at most this many
    "mcp_idle_minutes": 10.0,
    "mcp_max_sessions": 64,
    "mcp_client_sessions": 8,
}
WEB_NOTES = ("the web notebook inside `meshnode run`: where it listens (loopback by default; another address"
             " needs TLS or allow_remote), the login token file, how long a login lasts, extra Host names of a"
             " reverse proxy, the event feed's poll interval, stream cap and the retry a refused stream is told, the largest request body,"
             " whether /metrics needs the token, and /mcp's sessions: minutes idle before one ends, how many"
             " may be open, how many one client may hold (protocols/web.md section 12)")

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")  # Host names that are this listener's on loopback
CSP = ("default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self';"
       " frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
SECURITY_HEADERS = {"content-security-policy": CSP, "x-content-type-options": "nosniff",
                    "referrer-policy": "no-referrer", "x-frame-options": "DENY"}  # on every response

_RANGES = {"session_hours": (0.01, 24 * 366.0), "feed_ms": (50, 60_000), "max_streams": (1, 1024), "refused_retry_seconds": (1, 3600),
           "max_body_bytes": (1024, 64 * 1024 * 1024), "mcp_idle_minutes": (0.5, 24 * 60.0),
           "mcp_max_sessions": (1, 4096), "mcp_client_sessions": (1, 4096)}


def parse_listen(text: str) -> tuple[str, int]:
    """``host:port`` (IPv6 in brackets) -> (host without brackets, port); ValueError says why not."""
    if not isinstance(text, str) or ":" not in text:
        raise ValueError("must be HOST:PORT, e.g. 127.0.0.1:8470 or [::1]:8470")
    host, _, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise ValueError(f"{host!r} in brackets is not an IPv6 address") from None
    elif ":" in host:
        raise ValueError("an IPv6 address goes in brackets, e.g. [::1]:8470")
    if not host or len(host) > 253:
        raise ValueError("must be HOST:PORT, e.g. 127.0.0.1:8470")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"port {port[:10]!r} is not a number from 0 to 65535")
    return host, int(port)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def check_web(web: Mapping[str, Any], home: Path | None = None) -> None:
    """Every ``[web]`` value, one-line errors naming the setting (types were checked by the loader)."""
    try:
        host, _port = parse_listen(web["listen"])  # port 0: a free one (the tests use it)
    except ValueError as exc:
        raise ConfigError("bad_config", f"web.listen {str(web['listen'])[:80]!r}: {exc}") from None
    for key, (lo, hi) in _RANGES.items():
        if not lo <= web[key] <= hi:
            raise ConfigError("bad_config", f"web.{key} must be between {lo:g} and {hi:g}")
    hosts = web["hosts"]
    if len(hosts) > 64 or not all(isinstance(h, str) and 0 < len(h) <= 253 and h.isprintable() and " " not in h
                                  for h in hosts):
        raise ConfigError("bad_config", "web.hosts must be a list of at most 64 host names (a proxy's name)")
    if not web["token_path"]:
        raise ConfigError("bad_config", "web.token_path must name a file (relative to the home)")
    if bool(web["tls_cert"]) != bool(web["tls_key"]):
        raise ConfigError("bad_config", "web.tls_cert and web.tls_key go together: give both or neither")
    for key in ("tls_cert", "tls_key"):
        if web[key]:
            path = Path(os.path.expanduser(web[key]))
            if not path.is_absolute() and home is not None:
                path = home / path
            if not os.access(path, os.R_OK) or not path.is_file():
                raise ConfigError("bad_config", f"web.{key} {str(path)[:200]} is not a readable file")
    if not is_loopback(host) and not web["tls_cert"] and not web["allow_remote"]:
        raise ConfigError("web_remote_refused",
                          f"[web] listen {web['listen']} is not loopback; give tls_cert and tls_key, or set"
                          " allow_remote = true (the token then travels in clear)")
