"""Who is asking (protocols/a2a.md section 4): known parties, rate limits, held messages.

A *known party* presents ``Authorization: Bearer <token>`` with a token the person issued (a line
``name token`` in ``[a2a] known_tokens_path``) or the node's own web token (name ``person``).
Everyone else is unknown: limited per client address and per claimed identity (the message's
``metadata.sender``, else "anonymous"), and with ``approve_unknown`` their message is held as a
gate confirmation request (session ``a2a``) until a person approves it (``meshnode confirm approve
N`` or the web's confirmations). Pure parts take the time as an argument.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import stat
from dataclasses import dataclass
from pathlib import Path

SESSION = "a2a"  # the gate_confirmations session of held messages (the agent's own is "core")
TOOL = "a2a_message"
MAX_TOKENS_FILE = 64 * 1024
MIN_TOKEN_CHARS = 24
MAX_SENDER_CHARS = 200


@dataclass(frozen=True)
class Party:
    known: bool
    name: str  # the token's name (known), or the claimed sender (unknown)
    client: str  # the client's address

    @property
    def key(self) -> str:
        """Whose contexts and tasks these are (one party never reads or joins another's)."""
        return f"known:{self.name}" if self.known else f"unknown:{self.client}:{self.name}"


class RateLimiter:
    """A token bucket per key: ``per_minute`` refill, ``burst`` capacity; at most ``max_keys`` kept."""

    def __init__(self, per_minute: float, burst: int, max_keys: int = 4096):
        self.rate, self.burst, self.max_keys = per_minute / 60.0, float(burst), max_keys
        self._buckets: dict[str, tuple[float, float]] = {}

    def take(self, key: str, now: float) -> float:
        """0.0 when ``key`` may go now (a token is taken), else the seconds until it may."""
        level, last = self._buckets.get(key, (self.burst, now))
        level = min(self.burst, level + max(0.0, now - last) * self.rate)
        if level >= 1.0:
            self._remember(key, (level - 1.0, now), now)
            return 0.0
        self._remember(key, (level, now), now)
        return (1.0 - level) / self.rate

    def _remember(self, key: str, value: tuple[float, float], now: float) -> None:
        if key not in self._buckets and len(self._buckets) >= self.max_keys:
            full = [k for k, (lv, t) in self._buckets.items() if lv + (now - t) * self.rate >= self.burst]
            for k in full or list(self._buckets)[: self.max_keys // 2]:
                del self._buckets[k]
        self._buckets[key] = value


def read_tokens(path: Path) -> dict[str, str]:
    """``{token digest: name}`` of the known parties' file (missing: none; readable by others: refused,
    as the web token is)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return {}
    if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o077:
        raise PermissionError(f"{path} must be a regular file of mode 0600")
    out = {}
    for line in path.read_bytes()[:MAX_TOKENS_FILE].decode("utf-8", "replace").splitlines():
        parts = line.split()
        if len(parts) == 2 and not line.lstrip().startswith("#") and len(parts[1]) >= MIN_TOKEN_CHARS:
            out[digest(parts[1])] = parts[0][:64]
    return out


def token_names(path: Path) -> list[str]:
    """The names in the tokens file, in its order (the tokens themselves are not shown again)."""
    return list(read_tokens(path).values())


def add_token(path: Path, name: str) -> str:
    """A new token for the known party ``name`` (letters, digits, ``._-``), appended to the file
    (created 0600); returned once, to be handed to that party."""
    import secrets

    if not (0 < len(name) <= 64 and all(ch.isalnum() or ch in "._-" for ch in name)):
        raise ValueError("a party's name is 1 to 64 letters, digits, '.', '_' or '-'")
    if name in token_names(path):
        raise ValueError(f"{name} has a token already; remove it first for a new one")
    token = secrets.token_urlsafe(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(fd, "a") as f:
        f.write(f"{name} {token}\n")
    return token


def remove_token(path: Path, name: str) -> bool:
    """Drop ``name``'s token (its requests are an unknown party's from then on); False if it had none."""
    if name not in token_names(path):
        return False
    lines = path.read_text("utf-8", "replace").splitlines()
    keep = [line for line in lines if line.split()[:1] != [name]]
    tmp = path.with_name(path.name + ".new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write("".join(line + "\n" for line in keep))
    os.replace(tmp, path)
    return True


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


class KnownParties:
    """The known tokens, re-read when the file changes (a token the person adds or removes counts at once)."""

    def __init__(self, path: Path, web_auth=None):
        self.path, self.web_auth = path, web_auth
        self._stamp, self._tokens = None, {}

    def name_of(self, token: str) -> str | None:
        if self.web_auth is not None and self.web_auth.token_ok(token):
            return "person"
        try:
            st = os.stat(self.path)
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size, st.st_mode)
        except OSError:
            stamp = None
        if stamp != self._stamp:
            try:
                self._tokens = read_tokens(self.path)
            except (OSError, PermissionError):
                self._tokens = {}  # an unusable file: nobody is known by it until it is fixed
            self._stamp = stamp
        wanted = digest(token)
        for known, name in self._tokens.items():
            if hmac.compare_digest(known, wanted):
                return name
        return None


def client_of(peer: str, forwarded: str | None, trusted: frozenset[str]) -> str:
    """The client's address: the connection's peer, or when that peer is a trusted reverse proxy, the
    last hop of its ``X-Forwarded-For`` (the one it added itself; earlier hops are the client's word)."""
    if peer in trusted and forwarded:
        last = forwarded.rsplit(",", 1)[-1].strip()
        try:
            return str(ipaddress.ip_address(last))
        except ValueError:
            pass
    return peer


def bucket_of(address: str) -> str:
    """The rate limit's key for an address: an IPv6 address by its /64 (one host has a whole /64 to
    rotate through), any other as it is."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if ip.version == 4:
        return str(ip)
    if ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return str(ipaddress.ip_network(f"{ip}/64", strict=False))


def sender_of(body) -> str:
    """The identity an unknown party claims: ``params.message.metadata.sender`` (printable, cut)."""
    try:
        sender = body["params"]["message"]["metadata"]["sender"]
    except (KeyError, TypeError):
        return "anonymous"
    if not isinstance(sender, str) or not sender.strip():
        return "anonymous"
    return "".join(ch for ch in sender if ch.isprintable())[:MAX_SENDER_CHARS]
