"""Who is asking (protocols/a2a.md section 4): known parties, rate limits, held messages.

A *known party* presents ``Authorization: Bearer <token>`` with a token the person issued (a line
``name token`` in ``[a2a] known_tokens_path``: home/party_tokens.py) or the node's own web token
(name ``person``).
Everyone else is unknown: limited per client address and per claimed identity (the message's
``metadata.sender``, else "anonymous"), and with ``approve_unknown`` their message is held as a
gate confirmation request (session ``a2a``) until a person approves it (``meshnode confirm approve
N`` or the web's confirmations). Pure parts take the time as an argument.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from meshnode.records.a2a.addresses import host_of
from meshnode.records.a2a.held_queue import SESSION, TOOL, Shares  # noqa: F401 (SESSION, TOOL: for the face's modules)
from meshnode.store.home.party_tokens import digest, read_tokens, revoked_digests

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


class KnownParties:
    """The known tokens, re-read when the file changes (a token the person adds or removes counts at once)."""

    def __init__(self, path: Path, web_auth=None):
        self.path, self.web_auth = path, web_auth
        self._stamp, self._tokens, self._revoked = None, {}, {}

    def revoked(self, token: str) -> str | None:
        """The name of the party whose withdrawn token this is (None: it is no withdrawn token)."""
        self.name_of("")  # the file read again when it changed
        return self._revoked.get(digest(token))

    def name_of(self, token: str) -> str | None:
        if token and self.web_auth is not None and self.web_auth.token_ok(token):
            return "person"
        try:
            st = os.stat(self.path)
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size, st.st_mode)
        except OSError:
            stamp = None
        if stamp != self._stamp:
            try:
                self._tokens, self._revoked = read_tokens(self.path), revoked_digests(self.path)
            except (OSError, PermissionError):
                self._tokens, self._revoked = {}, {}  # an unusable file: nobody is known by it until it is fixed
            self._stamp = stamp
        if not token:
            return None
        wanted = digest(token)
        for known, name in self._tokens.items():
            if hmac.compare_digest(known, wanted):
                return name
        return None


def shares_of(settings) -> Shares:
    """The held queue's shares as ``[a2a]`` sets them (base.config.a2a.A2ASettings)."""
    return Shares(total=settings.max_held, per_party=settings.held_per_party, per_address=settings.held_per_address,
                  per_subnet=settings.held_per_subnet, retry_after_ms=int(settings.retry_after_minutes * 60_000))


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


bucket_of = host_of  # the rate limit's key for an address: an IPv6 address by its /64


def sender_of(body) -> str:
    """The identity an unknown party claims: ``params.message.metadata.sender`` (printable, cut)."""
    try:
        sender = body["params"]["message"]["metadata"]["sender"]
    except (KeyError, TypeError):
        return "anonymous"
    if not isinstance(sender, str) or not sender.strip():
        return "anonymous"
    return "".join(ch for ch in sender if ch.isprintable())[:MAX_SENDER_CHARS]
