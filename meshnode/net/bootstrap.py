"""bootstrap.txt: the peers a node dials first.

One libp2p multiaddr ending in ``/p2p/<peer id>`` per line; ``#`` starts a
comment; blank lines are ignored. A bad line is reported with its line number
and skipped, never fatal. Pure: text in, peers and problems out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import multiaddr

from meshnode.base.errors import IdentityError
from meshnode.base.identity.did import peer_id_to_did

MAX_LINE = 1024
MAX_FILE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class BootstrapPeer:
    addr: str  # the multiaddr without /p2p
    peer_id: str
    did: str
    line: int


@dataclass(frozen=True)
class BootstrapProblem:
    line: int
    text: str
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}: {self.text[:80]!r}"


def parse_bootstrap(text: str) -> tuple[list[BootstrapPeer], list[BootstrapProblem]]:
    peers: list[BootstrapPeer] = []
    problems: list[BootstrapProblem] = []
    seen: set[tuple[str, str]] = set()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        problem = None
        if len(line) > MAX_LINE:
            problem = "line too long"
        else:
            try:
                ma = multiaddr.Multiaddr(line)
                peer_id = ma.value_for_protocol("p2p")
                did = peer_id_to_did(peer_id)
                addr = str(ma.decapsulate(multiaddr.Multiaddr(f"/p2p/{peer_id}")))
                if not addr or addr == "/":
                    problem = "no address before /p2p"
            except multiaddr.exceptions.ProtocolLookupError:
                problem = "missing /p2p/<peer id> at the end"
            except IdentityError as exc:
                problem = exc.reason
            except (ValueError, multiaddr.exceptions.Error) as exc:
                problem = f"not a multiaddr ({exc})"
        if problem:
            problems.append(BootstrapProblem(number, raw.strip(), problem))
            continue
        if (addr, peer_id) in seen:
            continue
        seen.add((addr, peer_id))
        peers.append(BootstrapPeer(addr, peer_id, did, number))
    return peers, problems


def read_bootstrap(path: Path) -> tuple[list[BootstrapPeer], list[BootstrapProblem]]:
    """Read and parse a bootstrap file; a missing file is an empty list, not an error."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        return [], []
    except OSError as exc:
        return [], [BootstrapProblem(0, str(path), f"cannot read: {exc.strerror}")]
    problems = []
    if len(data) > MAX_FILE_BYTES:
        problems.append(BootstrapProblem(0, str(path), f"file larger than {MAX_FILE_BYTES} bytes; the rest is ignored"))
        data = data[:MAX_FILE_BYTES]
    peers, more = parse_bootstrap(data.decode("utf-8", errors="replace"))
    return peers, problems + more
