"""Who gets a new ``/mcp`` session when sessions are scarce: a pure rule over the open sessions (no
transport, no clock; ``sessions.py`` applies it to the SDK's session manager).

A session is idle when no request of it is in flight (no call being served, no open event stream)
and busy otherwise. A client (its address and User-Agent: the person's tools share one token and
usually the loopback address) holds at most ``per_client`` sessions; the node at most ``max_total``.
A new session that would pass either limit ends the oldest idle session first (that client's own for
its limit, anyone's for the node's): an abandoned session is always idle, so abandoned sessions never
keep a client out. Only when every session that could go is busy is the new one refused, and the
refusal says when to try again.
"""

from __future__ import annotations

from dataclasses import dataclass

RETRY_AFTER_S = 60  # a refusal's Retry-After: every session it could end was busy; one is idle again soon


@dataclass(frozen=True)
class Open:
    """One open session: its id, its client, and since when it is idle (None: busy now)."""
    sid: str
    client: str
    idle_since: float | None


@dataclass(frozen=True)
class Admission:
    """``evict``: the session to end first, if any; ``refused``: no session is opened (nothing is evicted);
    ``why``: the limit the eviction or refusal is for, "client_cap" (the client's) or "full" (the node's)."""
    evict: str | None = None
    refused: bool = False
    why: str | None = None


def admit(sessions: list[Open], client: str, *, max_total: int, per_client: int) -> Admission:
    """Whether ``client`` may open one more session beside ``sessions`` (oldest first), and which session
    ends to make room."""
    own = [s for s in sessions if s.client == client]
    if len(own) >= per_client:
        victim = _oldest_idle(own)
        return Admission(evict=victim, refused=victim is None, why="client_cap")
    if len(sessions) >= max_total:
        victim = _oldest_idle(sessions)
        return Admission(evict=victim, refused=victim is None, why="full")
    return Admission()


def _oldest_idle(sessions: list[Open]) -> str | None:
    idle = [s for s in sessions if s.idle_since is not None]
    return min(idle, key=lambda s: s.idle_since).sid if idle else None  # min keeps the first of equals: the oldest
