"""CPU budgets: who may make this node work, and how much (sans-IO, time passed in).

Theory of operation
-------------------
Every inbound frame, container and gossip message costs CPU to decode and
verify. The cost is charged to whoever caused it, in milliseconds of work,
against token buckets that refill at ``ms_per_second`` up to ``burst_ms``:

* *before* the work, an estimate from the input's size and item count
  (``estimate_ms``; one byte can be one CBOR item, and items cost more):
  a key whose bucket cannot cover it is refused (``admit`` says which key);
* *after* the work, the measured cost replaces the estimate (``settle``).

Identities are free, so one input is charged to three keys at once: the peer
(its DID), its remote address and the address's subnet (/24 for IPv4, /48 for
IPv6), each with its own, larger bucket. A known peer (own key, friend,
trusted, committee) is charged on its own key alone, with a larger budget:
an honest friend behind the attacker's NAT is not held to the attacker's
aggregate. Every table is a bounded LRU: idle keys are forgotten first.

Strangers share one budget (issue 36): identities are free and so are /24s
to an attacker with many addresses, so every input of a peer that is not
known is also charged to ONE shared key, ``strangers``
(``strangers_ms_per_second`` up to ``strangers_burst_ms``): all strangers
together, whatever their number and addresses, cost the node at most that
share of a core. Known peers are never charged to it, so a swarm of
strangers spending it leaves them their own budgets. The shared bucket is
kept apart from the LRU (it is never forgotten) and left out of
``pressure``: every stranger would otherwise look equally costly.
"""

from __future__ import annotations

import functools
import ipaddress
from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, Iterator, TypeVar

V = TypeVar("V")

ESTIMATE_BASE_MS = 0.2  # a frame's fixed cost: a thread hop and a small decode measured ~0.1-0.15 ms here
ESTIMATE_MS_PER_KIB = 0.1  # ~8x a valid container's decode and verify (0.0125 ms/KiB at 8-60 KiB); the
#                            measured cost replaces it afterwards, so it only has to be cheap and not far off
ESTIMATE_MS_PER_ITEM = 0.0016  # a container of empty arrays: 7,533 items (8,041 bytes) took 11.9 ms to decode
#                                and verify, 1.6 us an item, 16x its bytes' share

READ_MS_PER_KIB = 0.02  # receiving a frame before it is parsed: Noise decryption, yamux frames and windows,
#                         the paced read. Measured under a push flood (py-spy, 76 MB in 20 s): ~0.02 ms/KiB on
#                         the event loop, which the decode's measured cost leaves out


def read_ms(nbytes: int) -> float:
    """What receiving ``nbytes`` of one frame cost before it was parsed (charged once it is read)."""
    return nbytes / 1024 * READ_MS_PER_KIB


def estimate_ms(nbytes: int, items: int = 0) -> float:
    """What decoding and verifying ``nbytes`` holding ``items`` CBOR items is expected to cost, before
    doing it (a caller that could not count the items passes ``nbytes``: one item a byte at most)."""
    return ESTIMATE_BASE_MS + nbytes / 1024 * ESTIMATE_MS_PER_KIB + items * ESTIMATE_MS_PER_ITEM


@functools.lru_cache(maxsize=4096)  # on every charge; parsing the address was a third of admit + settle (~21 us)
def subnet_of(host: str) -> str:
    """The subnet an address is aggregated under: /24 for IPv4, /48 for IPv6 (an IPv4-mapped IPv6
    address counts as IPv4); anything that is not an IP address stands for itself."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if ip.version == 6 and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    prefix = 24 if ip.version == 4 else 48
    return str(ipaddress.ip_network(f"{ip}/{prefix}", strict=False))


class BoundedLRU(Generic[V]):
    """A dict that keeps at most ``limit`` entries, forgetting the least recently used one for which
    ``may_forget(value, now_ms)`` holds.

    The entry being inserted is never the one forgotten (the caller goes on to update it). When
    every other entry is protected, the oldest of them is forgotten anyway: memory stays bounded,
    and an attacker who fills the table with protected entries cannot switch the limits off for
    newcomers. What a forgotten entry loses is its in-memory state only (bans persist in the store)."""

    def __init__(self, limit: int, may_forget=lambda value, now_ms: True):
        self.limit = limit
        self.may_forget = may_forget
        self._items: OrderedDict[str, V] = OrderedDict()
        self.forced = 0  # protected entries forgotten because nothing else could go

    def get(self, key: str) -> V | None:
        value = self._items.get(key)
        if value is not None:
            self._items.move_to_end(key)
        return value

    def peek(self, key: str) -> V | None:
        return self._items.get(key)

    def pop(self, key: str) -> V | None:
        return self._items.pop(key, None)

    def put(self, key: str, value: V, now_ms: int = 0) -> V:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.limit:
            self._forget_one(key, now_ms)
        return value

    def _forget_one(self, keep: str, now_ms: int) -> None:
        oldest = None
        for key, value in self._items.items():  # oldest first; stops at the first that may go
            if key == keep:
                continue
            if oldest is None:
                oldest = key
            if self.may_forget(value, now_ms):
                del self._items[key]
                return
        if oldest is not None:  # every other entry is protected: the oldest goes anyway
            del self._items[oldest]
            self.forced += 1

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._items

    def keys(self) -> Iterator[str]:
        return iter(list(self._items))


@dataclass(frozen=True)
class BudgetLimits:
    ms_per_second: float = 100.0  # a tenth of a core per unknown peer, sustained
    burst_ms: float = 2000.0  # what it may spend at once (a first sync of a few thousand containers)
    known_factor: float = 10.0  # a known peer's budget, times the above
    address_factor: float = 4.0  # all identities of one address together, times a peer's
    subnet_factor: float = 8.0  # all addresses of one subnet together, times a peer's
    max_keys: int = 4096  # remembered keys per table
    strangers_ms_per_second: float = 150.0  # all strangers together: 0.15 of a core sustained, 1.5 strangers'
    #                                         rate, leaving the node's own work and known peers the rest
    strangers_burst_ms: float = 2000.0  # all strangers together may spend at once what one stranger may


STRANGERS = "strangers"  # the key every stranger's input is also charged to


@dataclass
class Bucket:
    tokens: float
    refilled_ms: int
    rate: float  # ms of work per second
    burst: float

    def refill(self, now_ms: int) -> None:
        elapsed = max(0, now_ms - self.refilled_ms)
        self.tokens = min(self.burst, self.tokens + elapsed * self.rate / 1000)
        self.refilled_ms = now_ms

    @property
    def spent(self) -> float:
        """How much of its burst is spent (more than the burst when in debt)."""
        return self.burst - self.tokens


@dataclass(frozen=True)
class Charge:
    """What was charged for one piece of work, to settle once its real cost is known."""
    keys: tuple[str, ...]
    estimate_ms: float


class OverBudget(Exception):
    """``key`` cannot pay for the work now; it may try again after ``retry_ms``."""

    def __init__(self, key: str, retry_ms: int):
        super().__init__(f"{key} is over its CPU budget; retry in {retry_ms} ms")
        self.key = key
        self.retry_ms = retry_ms


class CpuBudgets:
    """The token buckets of peers, addresses and subnets."""

    def __init__(self, limits: BudgetLimits = BudgetLimits()):
        self.limits = limits
        self._buckets: BoundedLRU[Bucket] = BoundedLRU(3 * limits.max_keys)
        self._keys_of: BoundedLRU[tuple[str, ...]] = BoundedLRU(limits.max_keys)  # peer -> keys it was last charged to
        self._strangers: Bucket | None = None  # made at the first stranger's input (its clock)

    def keys_for(self, peer: str, host: str | None, known: bool) -> tuple[str, ...]:
        """The keys one input from ``peer`` at ``host`` is charged to (a stranger's: also ``strangers``)."""
        if known:
            return (f"peer:{peer}",)
        if not host:
            return (f"peer:{peer}", STRANGERS)
        return (f"peer:{peer}", f"addr:{host}", f"net:{subnet_of(host)}", STRANGERS)

    def _peek(self, key: str) -> Bucket | None:
        return self._strangers if key == STRANGERS else self._buckets.peek(key)

    def _shared(self, now_ms: int) -> Bucket:
        if self._strangers is None:
            rate, burst = self.limits.strangers_ms_per_second, self.limits.strangers_burst_ms
            self._strangers = Bucket(burst, now_ms, rate, burst)
        self._strangers.refill(now_ms)
        return self._strangers

    def strangers_spent(self, now_ms: int) -> float:
        """How much of their shared burst all strangers together have spent (more than it in debt)."""
        return self._shared(now_ms).spent

    def _bucket(self, key: str, known: bool, now_ms: int) -> Bucket:
        if key == STRANGERS:
            return self._shared(now_ms)
        bucket = self._buckets.get(key)
        if bucket is None:
            kind = key.split(":", 1)[0]
            factor = {"addr": self.limits.address_factor, "net": self.limits.subnet_factor}.get(
                kind, self.limits.known_factor if known else 1.0)
            rate, burst = self.limits.ms_per_second * factor, self.limits.burst_ms * factor
            bucket = self._buckets.put(key, Bucket(burst, now_ms, rate, burst))
        else:
            self._grow_if_known(key, bucket, known)
        bucket.refill(now_ms)
        return bucket

    def _grow_if_known(self, key: str, bucket: Bucket, known: bool) -> None:
        """A peer that became known since its bucket was made gets the larger budget (and, in debt,
        the difference: a new friend is not held to what it spent as a stranger)."""
        if key.startswith("peer:") and known and bucket.rate < self.limits.ms_per_second * self.limits.known_factor:
            extra = bucket.burst * (self.limits.known_factor - 1)
            bucket.rate *= self.limits.known_factor
            bucket.burst += extra
            bucket.tokens += extra

    def admit(self, peer: str, host: str | None, known: bool, estimate: float, now_ms: int) -> Charge:
        """Charge ``estimate`` ms to every key of this input, or raise OverBudget (charging nothing)
        naming the first key that cannot pay. A bucket pays when it holds the estimate, or is full
        (work larger than a whole burst is done once, then paid back)."""
        keys = self.keys_for(peer, host, known)
        buckets = [self._bucket(k, known, now_ms) for k in keys]
        for key, bucket in zip(keys, buckets):
            if bucket.tokens < min(estimate, bucket.burst):
                missing = min(estimate, bucket.burst) - bucket.tokens
                raise OverBudget(key, max(1, int(missing * 1000 / bucket.rate) + 1))
        for bucket in buckets:
            bucket.tokens -= estimate
        self._keys_of.put(peer, keys, now_ms)
        return Charge(keys, estimate)

    def in_debt(self, peer: str, host: str | None, known: bool, now_ms: int) -> int | None:
        """When one of this input's keys is in debt (it spent more than it had), the ms until it is
        not: such a peer is refused before its input is even read. None when none is."""
        for key in self.keys_for(peer, host, known):
            bucket = self._peek(key)
            if bucket is not None:
                self._grow_if_known(key, bucket, known)
                bucket.refill(now_ms)
                if bucket.tokens < 0:
                    return max(1, int(-bucket.tokens * 1000 / bucket.rate) + 1)
        return None

    def settle(self, charge: Charge, cost_ms: float, now_ms: int) -> None:
        """Replace the estimate by the measured cost (a bucket may go into debt: it pays it back
        before it is admitted again)."""
        for key in charge.keys:
            bucket = self._peek(key)
            if bucket is not None:
                bucket.refill(now_ms)
                bucket.tokens += charge.estimate_ms - cost_ms

    def charge(self, peer: str, host: str | None, known: bool, cost_ms: float, now_ms: int) -> None:
        """Charge work already done (answers to our own requests, refused input) without admission."""
        keys = self.keys_for(peer, host, known)
        for key in keys:
            self._bucket(key, known, now_ms).tokens -= cost_ms
        self._keys_of.put(peer, keys, now_ms)

    def spent(self, peer: str, now_ms: int) -> float:
        """How much of its burst ``peer`` has spent recently: the fair queue serves the thriftiest first."""
        bucket = self._buckets.peek(f"peer:{peer}")
        if bucket is None:
            return 0.0
        bucket.refill(now_ms)
        return bucket.spent

    def pressure(self, peer: str, now_ms: int) -> float:
        """How much of its budgets ``peer``'s input has spent recently, relative to their bursts: the
        most over the peer, the address and the subnet it was last charged to (more than 1 in debt).
        The fair queue refuses the costliest first: relative, so a known peer's larger budget does not
        make it look costlier; over address and subnet, so fresh identities do not hide their spending
        (not over the strangers' shared budget: it would make every stranger look the same)."""
        keys = self._keys_of.peek(peer) or (f"peer:{peer}",)
        most = 0.0
        for key in keys:
            bucket = None if key == STRANGERS else self._buckets.peek(key)
            if bucket is not None:
                bucket.refill(now_ms)
                most = max(most, bucket.spent / bucket.burst)
        return most

    def __len__(self) -> int:
        return len(self._buckets)
