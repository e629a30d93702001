"""Hostile peers against a real node (issue 13): each attack runs for a few seconds from
tests/flood_peer.py while the honest side is watched: the victim's control `status` round
trip and its friend's pings, against an unloaded baseline measured in the same test; the
friend's liveness on the victim; what junk the victim stored; whether the attacker was
still served. One victim and one honest node (friends, trusted) serve the whole module.

Every check of a test is evaluated and all that fail are reported together, with the figures.
"""

from __future__ import annotations

import json
import time

import pytest

from flood_peer import GOSSIP_CLASS, JUNK_CLASS
from meshharness import ATTACK_NET, Node, data_bytes, flood, metric, plain_peer, wait_until, watch

# The storage quota for containers of unknown authors (issue 13 item 4), small so that a few
# seconds of junk cross it: 8 containers and 1 MiB in all. On code without quotas the variables
# are ignored (config reads only the settings it knows): the store grows without bound and the
# store checks fail.
UNKNOWN_QUOTA = 8
QUOTA_ENV = {"MESHNODE_LIMITS_UNKNOWN_TOTAL_CONTAINERS": str(UNKNOWN_QUOTA), "MESHNODE_LIMITS_UNKNOWN_TOTAL_MIB": "1",
             "MESHNODE_LIMITS_UNKNOWN_AUTHOR_CONTAINERS": str(UNKNOWN_QUOTA)}  # one author's share: at most the total


def status_bound(base_ms: float) -> float:
    """`status` p99 under attack: 5x the unloaded p99, at least 250 ms. The ratio is the goal (the
    loop keeps serving), the floor absorbs two shared cores: an unloaded p99 of 3 ms times 5 is
    below one scheduler slice of the attacker, the honest node and the test itself."""
    return max(5 * base_ms, 250.0)


def ping_bound(base_ms: float) -> float:
    """The friend's ping p99 under attack: 5x unloaded, at least 2 s. A ping is the CLI's: a DHT
    lookup of the victim's announce (through the victim), a new stream and a round trip, across
    two nodes' event loops, Noise and yamux; unloaded it takes 35-800 ms here on two shared cores,
    and one slow sample of the ~20 is the p99. A stalled victim makes it 9-14 s (issue 13)."""
    return max(5 * base_ms, 2000.0)


def liveness_of(observer: Node, did: str) -> str | None:
    rows = observer.try_call("peers") or []
    return next((r["liveness"] for r in rows if r["did"] == did), None)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("attack")
    victim = Node(root, "victim", env={**ATTACK_NET, **QUOTA_ENV})
    honest = Node(root, "honest", env={**ATTACK_NET, **QUOTA_ENV})
    victim.cli("reputation", "set", honest.did, "0.9")  # known and trusted both ways, and friends
    honest.cli("reputation", "set", victim.did, "0.9")
    try:
        victim.start()
        honest.set_bootstrap(victim)
        honest.start()
        victim.call("friend", {"did": honest.did})
        honest.call("friend", {"did": victim.did})
        wait_until(lambda: liveness_of(victim, honest.did) == "ok", 60, "the victim to hear its friend")
        yield victim, honest
        assert victim.stop() == 0 and honest.stop() == 0
    finally:
        victim.kill()
        honest.kill()


def baseline(victim: Node, honest: Node) -> dict:
    """The unloaded figures, once the victim answers promptly again (a previous attack's backlog
    is its own failure, named here rather than charged to the next attack)."""
    def prompt() -> bool:
        started = time.perf_counter()
        victim.call("status", timeout=60)
        return (time.perf_counter() - started) < 0.1
    wait_until(prompt, 60, "the victim to answer status within 100 ms again after the previous attack")
    wait_until(lambda: liveness_of(victim, honest.did) == "ok", 30, "the friend to be ok before the attack")
    return watch(victim, honest, lambda: time.sleep(3))  # measuring for 3 s, not waiting for something


def attack(pair, mode: str, seconds: float, *options: str) -> tuple[dict, dict, list[str]]:
    """Baseline, then the attack; the honest side's checks that failed (empty when all held)."""
    victim, honest = pair
    base = baseline(victim, honest)
    before, friend_had = _victim_counts(victim), _counts(honest)
    try:
        seen = flood(victim, honest, mode, seconds, *options)
    finally:
        for node in pair:  # a node that died under the attack is the failure to report
            assert node.proc.poll() is None, f"{node.name} exited ({node.proc.returncode}) under the {mode} " \
                "attack:\n" + "\n".join(node.drain(timeout=2)[-60:])
    for node in pair:  # what was still queued when the attacker left is stored (or refused) too
        _settled(node)
    seen["victim"] = _grown(before, _victim_counts(victim))
    seen["friend"] = _grown(friend_had, _counts(honest))  # what the victim relayed to its friend
    problems = []
    if not seen["attacker"]["connected"]:  # a fresh address is let in once at least: else nothing was tested
        problems.append(f"the attacker never got through: {seen['attacker']['outcomes']}")
    if seen["status_ms_p99"] > status_bound(base["status_ms_p99"]):
        problems.append(f"status p99 {seen['status_ms_p99']} ms > bound {status_bound(base['status_ms_p99'])} ms "
                        f"(unloaded {base['status_ms_p99']} ms)")
    if seen["ping_ms_p99"] > ping_bound(base["ping_ms_p99"]) or seen["ping_failed"]:
        problems.append(f"friend's ping p99 {seen['ping_ms_p99']} ms ({seen['ping_failed']} failed) > bound "
                        f"{ping_bound(base['ping_ms_p99'])} ms (unloaded {base['ping_ms_p99']} ms)")
    if seen["not_ok"]:
        problems.append(f"the victim marked its friend less than ok {seen['not_ok']} times during the attack")
    if liveness_of(victim, honest.did) != "ok":
        problems.append(f"the friend is {liveness_of(victim, honest.did)!r} on the victim after the attack")
    print(json.dumps({"mode": mode, "baseline": base, "attack": seen}))  # the figures, for -s and reports
    return base, seen, problems


def _counts(node: Node) -> dict:
    """Containers in ``node``'s store, in all ("containers") and by class ("class:x_flood_junk")."""
    return node.call("status")["counts"]


def _containers(node: Node) -> int:
    return _counts(node)["containers"]


def _grown(before: dict, after: dict) -> dict:
    return {k: after.get(k, 0) - before.get(k, 0) for k in after.keys() | before.keys()
            if after.get(k, 0) != before.get(k, 0)}


def _settled(node: Node) -> None:
    """Wait until ``node``'s container count holds still for a second."""
    counts: list[int] = []

    def still() -> bool:
        counts.append(_containers(node))
        return len(counts) >= 2 and counts[-1] == counts[-2]
    wait_until(still, 60, f"{node.name}'s store to stop growing after the attack", interval=1.0)


def _victim_counts(victim: Node) -> dict:
    return {**_counts(victim), "data_bytes": data_bytes(victim),
            **{name: metric(victim, name) for name in ("invalid_from_peer", "peers_cut_off", "connections_refused",
                                                          "exchange_refused")}}


def served_mostly(seen: dict) -> list[str]:
    """The attacker must be throttled or cut off: most of what it sent not served in full."""
    a = seen["attacker"]
    answered = a["served"] + a["refused"]
    if answered and a["served"] > answered / 2:
        return [f"the attacker was served in full {a['served']} of {answered} times (refused {a['refused']})"]
    return []


def stored_within(seen: dict, cls: str, what: str) -> list[str]:
    """The attack's containers (class ``cls``) on the victim, and on its friend through the
    victim's relaying, within the quota for unknown authors (both nodes run with it)."""
    problems = []
    for where, grown in (("the victim", seen["victim"].get(f"class:{cls}", 0)),
                         ("its friend", seen["friend"].get(f"class:{cls}", 0))):
        if grown > UNKNOWN_QUOTA:
            problems.append(f"{where} stored {grown} {what} from unknown authors; the quota holds {UNKNOWN_QUOTA}")
    return problems


def figures(base: dict, seen: dict) -> str:
    return json.dumps({"baseline": base, "attack": seen}, indent=1)


def test_big_frames_do_not_stall_the_node(pair):
    """1 MiB frames of empty arrays and 256 KiB containers of them, each identity paced to stay
    under the invalid-input cut-off and replaced by a fresh one when its budget is spent."""
    base, seen, problems = attack(pair, "bigframe", 8, "--workers", "2")
    problems += served_mostly(seen)
    assert not problems, "\n".join(problems) + "\n" + figures(base, seen)


def test_many_identities_from_one_address_do_not_stall_the_node(pair):
    """A fresh identity per round from one address, three costly frames at once, then it leaves."""
    base, seen, problems = attack(pair, "identities", 6, "--workers", "3")
    problems += served_mostly(seen)
    assert not problems, "\n".join(problems) + "\n" + figures(base, seen)


def test_junk_from_throwaway_keys_stays_within_the_quota(pair):
    """Valid containers from throw-away keys, pushed and gossiped: the store grows by at most the
    quota for unknown authors, and the friend's container stays."""
    victim, honest = pair
    mine = honest.call("note_add", {"text": "a friend's note", "audience": "public"})["did"]
    wait_until(lambda: victim.call("received", {"dids": [mine]}), 30, "the victim to receive the friend's note")
    base, seen, problems = attack(pair, "junk", 6, "--workers", "2")
    problems += stored_within(seen, JUNK_CLASS, "junk containers (8 KiB)")
    if not victim.call("received", {"dids": [mine]}):
        problems.append("the friend's note was evicted by strangers' junk")
    assert not problems, "\n".join(problems) + "\n" + figures(base, seen)


def test_slow_streams_do_not_hold_the_node(pair):
    """Exchange and sync streams held open, trickled a byte a second or silent."""
    base, seen, problems = attack(pair, "slowloris", 6, "--workers", "4")
    assert not problems, "\n".join(problems) + "\n" + figures(base, seen)


def test_oversized_and_costly_gossip_does_not_stall_the_node(pair):
    """Gossip over 64 KiB and just under: valid containers of empty arrays, and undecodable bytes."""
    base, seen, problems = attack(pair, "biggossip", 6, "--workers", "2")
    problems += stored_within(seen, GOSSIP_CLASS, "costly containers (63 or 96 KiB)")
    assert not problems, "\n".join(problems) + "\n" + figures(base, seen)


def test_connection_churn_does_not_lock_out_new_peers(pair):
    """300 identities that connect and leave at once. py-libp2p 0.8.1 admits at most 250 inbound
    connections at a time (its max_connections 300 less min_connections 50) and, measured on
    issue 13's code, did not give a slot back when such a connection ended: after 250 of them
    the node accepted no new peer at all, from any address, minutes later still."""
    victim, _ = pair
    base, seen, problems = attack(pair, "churn", 60, "--workers", "8", "--identities", "300")
    try:
        with plain_peer(victim):  # a new peer from another address, after the churn
            pass
    except AssertionError as exc:
        problems.append(f"a new peer could not connect after the churn: ...{str(exc)[-300:]}")
    assert not problems, "\n".join(problems) + "\n" + figures(base, seen)
