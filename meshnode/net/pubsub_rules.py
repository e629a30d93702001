"""What one peer's pubsub RPC may carry, checked after it parsed and before py-libp2p acts on it
(sans-IO: the RPC, the peer, whether it is known and the time are passed in).

Theory of operation
-------------------
Every part of a GossipSub RPC makes this node do or keep something: a publish
on a topic it does not carry is parsed for nothing, a SUBSCRIBE is kept in
py-libp2p's tables, an IHAVE makes it send an IWANT, an IWANT makes it look up
and send messages, a GRAFT or PRUNE for a topic it does not have makes it
answer or remember a back-off. An honest GossipSub peer never sends any of
these beyond what the protocol needs: it forwards only on topics the receiver
announced, subscribes to a few topics once, gossips once per heartbeat, asks
only for ids it was offered. So ``PubsubRules.check`` removes from the RPC what
goes beyond that and returns one ``Refusal`` per kind and reason; the caller
counts each (``pubsub_refused{kind,reason}``) and, when ``invalid``, holds it
against the peer as invalid input (PeerGuard.invalid: cut off past the
threshold). A known peer (friend, committee...) gets ``known_factor`` times the
counts and is never held to a rule as invalid input: what it sends beyond them
is dropped and counted only. Every table is a bounded LRU.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from meshnode.net.budget import BoundedLRU


@dataclass(frozen=True)
class PubsubLimits:
    max_rpc_bytes: int = 1024 * 1024  # py-libp2p's DefaultMaxMessageSize: a frame over it resets the stream
    subscriptions_per_frame: int = 16  # SUBSCRIBE/UNSUBSCRIBE entries in one RPC (py-libp2p allows 5,000)
    subscription_burst: int = 32  # entries a peer may send at once (its hello lists every topic it carries)
    subscriptions_per_minute: float = 12.0  # then this many a minute: a node joins or leaves a topic rarely
    topics_per_peer: int = 16  # topics one peer may be subscribed to here (meshnode has 2; py-libp2p: 100)
    ihave_per_heartbeat: int = 10  # IHAVE entries per heartbeat window (go-libp2p's MaxIHaveMessages)
    ihave_ids_per_heartbeat: int = 5000  # message ids offered per heartbeat window (go-libp2p's MaxIHaveLength)
    iwant_ids_per_frame: int = 5000  # ids asked for in one RPC
    idontwant_ids_per_frame: int = 5000  # ids declined in one RPC
    heartbeat_ms: int = 1000  # the window of the IHAVE counts: the GossipSub default heartbeat, whatever ours is
    #                           (the sender's heartbeat sets its pace, not ours); the excess is dropped, as go-libp2p
    #                           does, and held against the peer only past ihave_over_invalid times the count
    ihave_over_invalid: int = 3  # a peer with a 0.1 s heartbeat on 2 topics sends 20 a second: under 10 + 3 x 10
    topic_bytes: int = 256  # a topic name's length (meshnode's are ~25 bytes; py-libp2p keeps every name it is told)
    advertised_ms: int = 10_000  # ids offered to a peer are remembered this long (mcache keeps 5 heartbeats)
    advertised_per_peer: int = 20_000  # and at most this many per peer (oldest first forgotten)
    over_budget_per_invalid: int = 4  # frames dropped over the CPU budget that count as one invalid input
    known_factor: int = 10  # a known peer's counts, times the above
    max_peers: int = 4096  # peers remembered (idle ones forgotten first)


@dataclass(frozen=True)
class Refusal:
    """``n`` parts of ``kind`` (publish, subscribe, ihave, iwant, graft, prune, idontwant, frame) were
    dropped for ``reason``; ``invalid``: held against the peer (weighed by ``nbytes``)."""
    kind: str
    reason: str
    n: int = 1
    invalid: bool = True
    nbytes: int = 0


@dataclass
class _PeerState:
    sub_tokens: float
    sub_refilled_ms: int
    topics: set[str] = field(default_factory=set)
    window_ms: int = 0  # start of the current heartbeat window
    ihaves: int = 0
    ihave_ids: int = 0
    ihave_over: int = 0  # IHAVE entries dropped in the window
    over_budget: int = 0
    advertised: dict[str, int] = field(default_factory=dict)  # id -> when offered (insertion ordered)


class PubsubRules:
    """Per-peer pubsub bookkeeping; ``carried(topic)`` says whether this node carries a topic (it is
    subscribed or has a mesh for it)."""

    def __init__(self, carried: Callable[[str], bool], limits: PubsubLimits = PubsubLimits()):
        self.carried, self.limits = carried, limits
        self._peers: BoundedLRU[_PeerState] = BoundedLRU(limits.max_peers)

    def _state(self, peer: str, now_ms: int) -> _PeerState:
        state = self._peers.get(peer)
        if state is None:
            state = self._peers.put(peer, _PeerState(float(self.limits.subscription_burst), now_ms), now_ms)
        return state

    def stream_ended(self, peer: str) -> None:
        """The peer's pubsub stream is gone: py-libp2p forgets its subscriptions, so do we (its
        counts stay: a new stream does not start them afresh)."""
        state = self._peers.peek(peer)
        if state is not None:
            state.topics.clear()

    def topics_of(self, peer: str) -> set[str]:
        state = self._peers.peek(peer)
        return set(state.topics) if state else set()

    # --- charged before parse -------------------------------------------------------

    def over_budget(self, peer: str, known: bool, now_ms: int, own: bool = True) -> Refusal:
        """One frame dropped unread because the peer (or its address, subnet, or all strangers) was over
        its CPU budget: every ``over_budget_per_invalid`` such frames from a stranger over its ``own``
        budget count as one invalid input. A budget it shares (its address's, its subnet's, the
        strangers') emptied by others is no fault of this peer: its frames are dropped, not held
        against it, or a swarm would get every honest stranger banned."""
        state = self._state(peer, now_ms)
        state.over_budget += own
        strike = own and not known and state.over_budget % self.limits.over_budget_per_invalid == 0
        return Refusal("frame", "over_budget" if own else "shared_over_budget", invalid=strike)

    # --- what this node offered --------------------------------------------------------

    def advertised(self, peer: str, ids, now_ms: int) -> None:
        """``ids`` were offered to ``peer`` in an IHAVE: it may ask for them (IWANT)."""
        state = self._state(peer, now_ms)
        offered = state.advertised
        for mid in ids:
            offered.pop(mid, None)
            offered[mid] = now_ms
        while len(offered) > self.limits.advertised_per_peer:
            del offered[next(iter(offered))]

    def _expire_advertised(self, state: _PeerState, now_ms: int) -> None:
        offered = state.advertised
        while offered:
            mid, when = next(iter(offered.items()))
            if now_ms - when <= self.limits.advertised_ms:
                break
            del offered[mid]

    # --- after parse ---------------------------------------------------------------------

    def check(self, peer: str, known: bool, rpc, now_ms: int) -> list[Refusal]:
        """Remove from ``rpc`` (a py-libp2p ``rpc_pb2.RPC``, changed in place) what goes beyond the
        rules; the refusals, one per kind and reason."""
        state = self._state(peer, now_ms)
        factor = self.limits.known_factor if known else 1
        refusals: list[Refusal] = []
        if len(rpc.publish):
            self._check_publish(rpc, refusals)
        if len(rpc.subscriptions):
            self._check_subscriptions(state, rpc, factor, now_ms, refusals)
        if rpc.HasField("control"):
            self._check_control(state, rpc.control, factor, now_ms, refusals)
            if not rpc.control.ListFields():
                rpc.ClearField("control")
        if known:
            refusals = [Refusal(r.kind, r.reason, r.n, False, r.nbytes) for r in refusals]
        return refusals

    def _check_publish(self, rpc, refusals: list[Refusal]) -> None:
        kept, dropped, nbytes = [], 0, 0
        for msg in rpc.publish:
            if any(self.carried(t) for t in msg.topicIDs):
                kept.append(msg)
            else:
                dropped += 1
                nbytes += len(msg.data)
        if dropped:
            _replace(rpc.publish, kept)
            refusals.append(Refusal("publish", "unknown_topic", dropped, nbytes=nbytes))

    def _check_subscriptions(self, state: _PeerState, rpc, factor: int, now_ms: int,
                             refusals: list[Refusal]) -> None:
        subs = rpc.subscriptions
        if len(subs) > self.limits.subscriptions_per_frame * factor:  # the first ones are kept (a hello
            refusals.append(Refusal("subscribe", "too_many_in_frame", len(subs) - self.limits.subscriptions_per_frame * factor))
            _replace(subs, list(subs)[:self.limits.subscriptions_per_frame * factor])  # lists ours among them)
        long_names = sum(len(sub.topicid) > self.limits.topic_bytes for sub in subs)
        if long_names:
            refusals.append(Refusal("subscribe", "topic_too_long", long_names))
            _replace(subs, [sub for sub in subs if len(sub.topicid) <= self.limits.topic_bytes])
        self._refill_subscriptions(state, factor, now_ms)
        kept, churn, too_many = [], 0, 0
        for sub in subs:
            if state.sub_tokens < 1:
                churn += 1
                continue
            state.sub_tokens -= 1
            if sub.subscribe:
                if sub.topicid not in state.topics and len(state.topics) >= self.limits.topics_per_peer * factor:
                    too_many += 1
                    continue
                state.topics.add(sub.topicid)
            else:
                state.topics.discard(sub.topicid)
            kept.append(sub)
        if churn or too_many:
            _replace(subs, kept)
        if churn:
            refusals.append(Refusal("subscribe", "churn", churn))
        if too_many:
            refusals.append(Refusal("subscribe", "too_many_topics", too_many))

    def _refill_subscriptions(self, state: _PeerState, factor: int, now_ms: int) -> None:
        burst = float(self.limits.subscription_burst * factor)
        rate = self.limits.subscriptions_per_minute * factor / 60_000
        state.sub_tokens = min(burst, state.sub_tokens + max(0, now_ms - state.sub_refilled_ms) * rate)
        state.sub_refilled_ms = now_ms

    def _check_control(self, state: _PeerState, control, factor: int, now_ms: int, refusals: list[Refusal]) -> None:
        if len(control.ihave):
            self._check_ihave(state, control, factor, now_ms, refusals)
        if len(control.iwant):
            self._check_iwant(state, control, factor, now_ms, refusals)
        for name in ("graft", "prune"):
            entries = getattr(control, name)
            if len(entries):
                kept = [e for e in entries if self.carried(e.topicID)]
                if len(kept) < len(entries):
                    refusals.append(Refusal(name, "unknown_topic", len(entries) - len(kept)))
                    _replace(entries, kept)
        for prune in control.prune:  # peer exchange: py-libp2p would dial every peer a PRUNE names, from
            del prune.peers[:]       # anyone (accept_px_threshold -inf); peers are found through the DHT
        if len(control.idontwant):
            ids = sum(len(e.messageIDs) for e in control.idontwant)
            if ids > self.limits.idontwant_ids_per_frame * factor:
                refusals.append(Refusal("idontwant", "too_many_ids", ids))
                control.ClearField("idontwant")

    def _check_ihave(self, state: _PeerState, control, factor: int, now_ms: int, refusals: list[Refusal]) -> None:
        if now_ms - state.window_ms >= self.limits.heartbeat_ms:
            state.window_ms, state.ihaves, state.ihave_ids, state.ihave_over = now_ms, 0, 0, 0
        kept, unknown, over = [], 0, 0
        for ihave in control.ihave:
            if not self.carried(ihave.topicID):
                unknown += 1
                continue
            ids = len(ihave.messageIDs)
            if state.ihaves + 1 > self.limits.ihave_per_heartbeat * factor \
                    or state.ihave_ids + ids > self.limits.ihave_ids_per_heartbeat * factor:
                over += 1
                continue
            state.ihaves += 1
            state.ihave_ids += ids
            kept.append(ihave)
        if unknown or over:
            _replace(control.ihave, kept)
        if unknown:
            refusals.append(Refusal("ihave", "unknown_topic", unknown))
        if over:
            state.ihave_over += over
            flood = state.ihave_over > self.limits.ihave_over_invalid * self.limits.ihave_per_heartbeat * factor
            refusals.append(Refusal("ihave", "over_heartbeat", over, invalid=flood))

    def _check_iwant(self, state: _PeerState, control, factor: int, now_ms: int, refusals: list[Refusal]) -> None:
        ids = sum(len(e.messageIDs) for e in control.iwant)
        if ids > self.limits.iwant_ids_per_frame * factor:
            refusals.append(Refusal("iwant", "too_many_ids", ids))
            control.ClearField("iwant")
            return
        self._expire_advertised(state, now_ms)
        offered, unadvertised = state.advertised, 0
        for iwant in control.iwant:
            asked = list(iwant.messageIDs)
            wanted = [mid for mid in asked if mid in offered]
            if len(wanted) < len(asked):
                unadvertised += len(asked) - len(wanted)
                del iwant.messageIDs[:]
                iwant.messageIDs.extend(wanted)
        if unadvertised:
            refusals.append(Refusal("iwant", "unadvertised", unadvertised))


def _replace(repeated, kept: list) -> None:
    """Keep only ``kept`` (a sublist, in order) in a protobuf repeated field."""
    copies = [type(item)() for item in kept]
    for copy, item in zip(copies, kept):
        copy.CopyFrom(item)
    del repeated[:]
    repeated.extend(copies)
