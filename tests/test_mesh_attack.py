"""Hostile peers against a real node (issue 13): each attack runs for a few seconds from
tests/flood_peer.py while the honest side is watched: every control `status` of the victim and
every ping from its friend is answered, the victim never marks its friend less than ok (its
heartbeat deadlines: a stalled event loop misses them), the victim counts what it refused, the
junk it stored stays within the quota, and the attacker was let in at least once and was not
served. One victim and one honest node (friends, trusted) serve the whole module.

How fast the honest side is served under each attack (status and ping p99 as ratios to the
unloaded figures) is a latency on two shared cores: bench/attack.py measures it against its goal;
the figures are printed here for -s, not asserted. Every check of a test is evaluated and all that
fail are reported together, with the figures.
"""

from __future__ import annotations

import json

import pytest

from flood_peer import GOSSIP_CLASS, JUNK_CLASS
from meshharness import ATTACK_NET, Node, data_bytes, flood, plain_peer, wait_until
from meshnode.net.inbound import inbound_slots

# The storage quota for containers of unknown authors (issue 13 item 4), small so that a few
# seconds of junk cross it: 8 containers and 1 MiB in all. On code without quotas the variables
# are ignored (config reads only the settings it knows): the store grows without bound and the
# store checks fail.
UNKNOWN_QUOTA = 8
QUOTA_ENV = {"MESHNODE_LIMITS_UNKNOWN_TOTAL_CONTAINERS": str(UNKNOWN_QUOTA), "MESHNODE_LIMITS_UNKNOWN_TOTAL_MIB": "1",
             "MESHNODE_LIMITS_UNKNOWN_AUTHOR_CONTAINERS": str(UNKNOWN_QUOTA)}  # one author's share: at most the total
# The victim's connections at most ([net] max_connections), small so that a few seconds of churn
# cross its inbound slots (25 here; 250 at the default) as 300 identities crossed the default's.
MAX_CONNECTIONS = 30
CAP_ENV = {"MESHNODE_NET_MAX_CONNECTIONS": str(MAX_CONNECTIONS)}


def liveness_of(observer: Node, did: str) -> str | None:
    rows = observer.try_call("peers") or []
    return next((r["liveness"] for r in rows if r["did"] == did), None)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    root = tmp_path_factory.mktemp("attack")
    victim = Node(root, "victim", env={**ATTACK_NET, **QUOTA_ENV, **CAP_ENV})
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


def ready(victim: Node, honest: Node) -> None:
    """Before an attack, the previous one is over at the victim: none of its identities is still
    connected (its friend alone is), and the friend is ok."""
    def alone_with_friend() -> bool:
        connected = (victim.try_call("status") or {}).get("connected")
        return connected is not None and set(connected) <= {honest.peer_id}
    wait_until(alone_with_friend, 60, "the previous attacker's connections to the victim to be gone")
    wait_until(lambda: liveness_of(victim, honest.did) == "ok", 30, "the friend to be ok before the attack")


def attack(pair, mode: str, seconds: float, *options: str) -> tuple[dict, list[str]]:
    """The attack, watched; the honest side's checks that failed (empty when all held)."""
    victim, honest = pair
    ready(victim, honest)
    before, friend_had = _victim_counts(victim), _counts(honest)
    try:
        seen = flood(victim, honest, mode, seconds, *options)
    finally:
        for node in pair:  # a node that died under the attack is the failure to report
            assert node.proc.poll() is None, f"{node.name} exited ({node.proc.returncode}) under the {mode} " \
                "attack:\n" + "\n".join(node.drain(timeout=2)[-60:])
    _settled(pair)  # what was still queued when the attacker left is stored (or refused) too
    seen["victim"] = _grown(before, _victim_counts(victim))
    seen["friend"] = _grown(friend_had, _counts(honest))  # what the victim relayed to its friend
    problems = []
    if not seen["attacker"]["connected"]:  # a fresh address is let in once at least: else nothing was tested
        problems.append(f"the attacker never got through: {seen['attacker']['outcomes']}")
    if seen["status_failed"]:  # each call may wait 60 s: a failure is a node that did not answer at all
        problems.append(f"{seen['status_failed']} of the victim's {seen['status_n']} status calls failed")
    if seen["ping_failed"]:  # the ping's round trip has 10 s (REQUEST_TIMEOUT)
        problems.append(f"{seen['ping_failed']} of the friend's {seen['ping_n']} pings of the victim failed")
    if seen["not_ok"]:
        problems.append(f"the victim marked its friend less than ok {seen['not_ok']} times during the attack")
    if liveness_of(victim, honest.did) != "ok":
        problems.append(f"the friend is {liveness_of(victim, honest.did)!r} on the victim after the attack")
    print(json.dumps({"mode": mode, "attack": seen}))  # the figures, for -s and reports
    return seen, problems


def _counts(node: Node) -> dict:
    """Containers in ``node``'s store, in all ("containers") and by class ("class:x_flood_junk")."""
    return node.call("status")["counts"]


def _containers(node: Node) -> int:
    return _counts(node)["containers"]


def _grown(before: dict, after: dict) -> dict:
    return {k: after.get(k, 0) - before.get(k, 0) for k in after.keys() | before.keys()
            if after.get(k, 0) != before.get(k, 0)}


def _settled(nodes: tuple[Node, ...]) -> None:
    """Wait until the container counts of ``nodes`` hold still together for a second (watched side
    by side: one second of stillness for all, not one after the other)."""
    counts: list[tuple[int, ...]] = []

    def still() -> bool:
        counts.append(tuple(_containers(node) for node in nodes))
        return len(counts) >= 2 and counts[-1] == counts[-2]
    names = " and ".join(node.name for node in nodes)
    wait_until(still, 60, f"the stores of {names} to stop growing after the attack", interval=1.0)


# what the victim counts when it refuses or drops an attacker's work: summed ("name"), by reason
# ("name:reason") and by the way it came ("name@push")
REFUSALS = ("invalid_from_peer", "peers_cut_off", "connections_refused", "exchange_refused", "containers_refused",
            "containers_evicted", "gossip_ignored", "gossip_dropped")


def _victim_counts(victim: Node) -> dict:
    out = {**_counts(victim), "data_bytes": data_bytes(victim)}
    for m in victim.call("metrics"):
        if m["name"] in REFUSALS:
            labels = m["labels"]
            for key in (m["name"], *([f"{m['name']}:{labels['reason']}"] if "reason" in labels else []),
                        *([f"{m['name']}@{labels['via']}"] if "via" in labels else [])):
                out[key] = out.get(key, 0) + m["value"]
    return out


def counted(seen: dict, *names: str) -> list[str]:
    """The victim counted the attack's refusals: one of the counters ``names`` grew."""
    if not any(seen["victim"].get(name, 0) > 0 for name in names):
        return [f"the victim counted no refusal of the attack in {', '.join(names)}"]
    return []


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


def figures(seen: dict) -> str:
    return json.dumps(seen, indent=1)


def test_the_startup_heap_is_out_of_full_collections(pair):
    """Once started, a node freezes its startup heap (base/heap.py): a full GC pass walked its
    ~150,000 objects in ~0.1 s, the longest stall of the loop under attack."""
    victim, _ = pair
    gauges = {g["name"]: g["value"] for g in victim.call("metrics", {"full": True})["gauges"]}
    assert gauges.get("gc_frozen_objects", 0) > 50_000, gauges


def test_the_loop_gives_the_interpreter_lock_back_within_a_ms(pair):
    """A running node's switch interval is 1 ms (base/gil.py): at CPython's 5 ms, each of the ~40
    lock trips of a store read waited up to 5 ms behind a busy loop (status p99 under attack)."""
    victim, _ = pair
    gauges = {g["name"]: g["value"] for g in victim.call("metrics", {"full": True})["gauges"]}
    assert gauges.get("gil_switch_interval_seconds") == pytest.approx(0.001), gauges


def test_big_frames_do_not_stall_the_node(pair):
    """1 MiB frames of empty arrays and 256 KiB containers of them, each identity paced to stay
    under the invalid-input cut-off and replaced by a fresh one when its budget is spent."""
    seen, problems = attack(pair, "bigframe", 8, "--workers", "2")
    problems += served_mostly(seen) + counted(seen, "invalid_from_peer", "exchange_refused")
    assert not problems, "\n".join(problems) + "\n" + figures(seen)


def test_many_identities_from_one_address_do_not_stall_the_node(pair):
    """A fresh identity per round from one address, three costly frames at once, then it leaves."""
    seen, problems = attack(pair, "identities", 6, "--workers", "3")
    problems += served_mostly(seen) + counted(seen, "invalid_from_peer", "exchange_refused")
    assert not problems, "\n".join(problems) + "\n" + figures(seen)


def test_junk_from_throwaway_keys_stays_within_the_quota(pair):
    """Valid containers from throw-away keys, pushed and gossiped: the store grows by at most the
    quota for unknown authors, every push the victim refused it counted, and the friend's
    container stays."""
    victim, honest = pair
    mine = honest.call("note_add", {"text": "a friend's note", "audience": "public"})["did"]
    wait_until(lambda: victim.call("received", {"dids": [mine]}), 30, "the victim to receive the friend's note")
    seen, problems = attack(pair, "junk", 6, "--workers", "2")
    problems += stored_within(seen, JUNK_CLASS, "junk containers (8 KiB)")
    # nothing unaccounted: each push the victim refused it counted; each it took is stored or was
    # evicted (counted) for the quota
    grown, outcomes = seen["victim"], seen["attacker"]["outcomes"]
    refused = sum(n for outcome, n in outcomes.items() if outcome.startswith("ack:rejected"))
    if refused > grown.get("containers_refused@push", 0) + grown.get("exchange_refused", 0):
        problems.append(f"the attacker was told of {refused} refused pushes; the victim counted fewer")
    taken = outcomes.get("ack:accepted", 0)
    if taken > grown.get(f"class:{JUNK_CLASS}", 0) + grown.get("containers_evicted", 0):
        problems.append(f"the victim took {taken} pushed containers; fewer are stored or counted as evicted")
    if not victim.call("received", {"dids": [mine]}):
        problems.append("the friend's note was evicted by strangers' junk")
    assert not problems, "\n".join(problems) + "\n" + figures(seen)


def test_slow_streams_do_not_hold_the_node(pair):
    """Exchange and sync streams held open, trickled a byte a second or silent."""
    seen, problems = attack(pair, "slowloris", 6, "--workers", "4")
    problems += counted(seen, "invalid_from_peer", "exchange_refused")
    assert not problems, "\n".join(problems) + "\n" + figures(seen)


def test_oversized_and_costly_gossip_does_not_stall_the_node(pair):
    """Gossip over 64 KiB and just under: valid containers of empty arrays, and undecodable bytes."""
    seen, problems = attack(pair, "biggossip", 6, "--workers", "2")
    problems += stored_within(seen, GOSSIP_CLASS, "costly containers (63 or 96 KiB)")
    problems += counted(seen, "invalid_from_peer", "gossip_ignored", "gossip_dropped")
    assert not problems, "\n".join(problems) + "\n" + figures(seen)


def test_connection_churn_does_not_lock_out_new_peers(pair):
    """Identities that connect and leave at once, nearly twice as many as the victim's inbound
    slots. py-libp2p 0.8.1 admits max_connections less min_connections inbound connections at a
    time (250 by default, 25 on this victim) and, measured on issue 13's code, did not give a slot
    back when such a connection ended: once they were used, the node accepted no new peer at all,
    from any address, minutes later still."""
    slots = inbound_slots(MAX_CONNECTIONS)
    victim, _ = pair
    # 45 identities from 8 /24s: connections that end without a stream are handshake-level strikes
    # (30 ban an address, protocols/mesh.md section 7), so from one address the ban ended the churn
    # before it used every slot
    seen, problems = attack(pair, "churn", 60, "--workers", "8", "--identities", str(slots * 9 // 5),
                            "--spread", "8")
    if seen["attacker"]["connected"] <= slots:  # else the slots were never all used: nothing was tested
        problems.append(f"the churn made {seen['attacker']['connected']} connections, not more than the "
                        f"victim's {slots} inbound slots")
    try:
        with plain_peer(victim):  # a new peer from another address, after the churn
            pass
    except AssertionError as exc:
        problems.append(f"a new peer could not connect after the churn: ...{str(exc)[-300:]}")
    assert not problems, "\n".join(problems) + "\n" + figures(seen)
