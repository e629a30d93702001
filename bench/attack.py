"""Hostile peers against a real node: the honest side during each attack, as ratios to the
same run's unloaded figures.

    python bench/attack.py [--seconds 25] [--attacks bigframe,identities,junk,slowloris,biggossip]
                           [--baseline 10] [--settle 20] [--smoke]

One victim node and one honest node (friends, each trusting the other) on loopback, with
default limits and quotas (what an internet-facing node runs with) and heartbeats every
second (quiet after 4 s, so a stalled event loop shows as flaps). Each attack comes from
tests/flood_peer.py for ``--seconds``; for each it prints:
- how long after the previous attack (or the start) the victim answered `status` within 100 ms
  again (``calm_after_s``: a backlog left by the previous attack shows here, not in this one);
- the honest node's ping of the victim (the whole CLI ping: announce lookup, stream, round
  trip) and the victim's control `status` round trip, p50 and p99, and their ratios to the
  unloaded figures measured at the start of the run (goal: p99 at most 3x; the suite's
  tests/test_mesh_attack.py checks the mechanisms, these latencies are the bench's alone);
- the victim's CPU share (of one core, /proc/PID/stat) during the attack;
- the victim's RSS before, at its peak, and ``--settle`` s after the attack;
- containers (in all and by class: flood_peer's are x_flood_*) and bytes (database on disk)
  the victim stored, and how often it marked its friend less than ok;
- what the attacker saw (flood_peer's summary: served, refused, identities, ...), and whether
  a new peer can still connect afterwards.
It uses only the node's control commands and CLI that existed before issue 13, so it also
measures older code (PYTHONPATH=<old checkout>; "code" in the output says which ran).
``--smoke``: the junk attack for one second after half a second unloaded, no settle window, the
homes made in this process. A closing line says whether every attack met the goal
(``goal_met``); the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

ATTACKS = {  # mode: its options (how many concurrent identities)
    "bigframe": ["--workers", "2"],
    "identities": ["--workers", "3"],
    "junk": ["--workers", "2"],
    "slowloris": ["--workers", "4"],
    "biggossip": ["--workers", "2"],
    "churn": ["--workers", "8", "--identities", "300"],  # last: on py-libp2p 0.8.1 it locked new peers out
}
GOAL_P99_RATIO = 3.0
SMOKE = {"seconds": 1.0, "attacks": ["junk"], "baseline": 0.5, "settle": 0.0}  # --smoke


def ratio(loaded: float | None, unloaded: float | None) -> float | None:
    return round(loaded / unloaded, 1) if loaded is not None and unloaded else None


def calm(victim, timeout: float = 120.0) -> float | None:
    """Seconds until the victim answers `status` within 100 ms again (None: not within ``timeout``)."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        t = time.perf_counter()
        victim.try_call("status", timeout=60)
        if time.perf_counter() - t < 0.1:
            return round(time.perf_counter() - started, 1)
        time.sleep(0.2)  # the pace of the questions
    return None


def one_attack(victim, honest, mode: str, seconds: float, settle: float, unloaded: dict) -> dict:
    from meshharness import data_bytes, flood, rss_mib

    out: dict = {"calm_after_s": calm(victim)}
    pid = victim.proc.pid
    counts, disk, rss = victim.call("status")["counts"], data_bytes(victim), rss_mib(pid)
    seen = flood(victim, honest, mode, seconds, *ATTACKS[mode])
    time.sleep(settle)  # part of the measurement: what memory the node still holds afterwards
    for name in ("status", "ping"):
        for p in ("p50", "p99"):
            out[f"{name}_ms_{p}"] = seen[f"{name}_ms_{p}"]
            out[f"{name}_{p}_ratio"] = ratio(seen[f"{name}_ms_{p}"], unloaded[f"{name}_ms_{p}"])
        out[f"{name}_failed"] = seen[f"{name}_failed"]
    out.update(cpu_share=seen["cpu_share"], rss_before_mib=rss, rss_peak_mib=seen["rss_peak_mib"],
               rss_after_mib=rss_mib(pid), friend_not_ok=seen["not_ok"],
               junk_bytes_on_disk=data_bytes(victim) - disk, attacker=seen["attacker"])
    after = victim.call("status")["counts"]
    out["junk_containers"] = after["containers"] - counts["containers"]
    out["stored_by_class"] = {k.removeprefix("class:"): after[k] - counts.get(k, 0) for k in after
                              if k.startswith("class:") and after[k] != counts.get(k, 0)}
    out["new_peer_connects"] = _new_peer_connects(victim)
    out["within_goal"] = out["new_peer_connects"] and all(
        out[f"{n}_p99_ratio"] is not None and out[f"{n}_p99_ratio"] <= GOAL_P99_RATIO for n in ("status", "ping"))
    return out


def _new_peer_connects(victim) -> bool:
    """Whether a new plain libp2p peer can still connect to the victim (after the churn, none could)."""
    from meshharness import plain_peer

    try:
        with plain_peer(victim):
            return True
    except AssertionError:
        return False


def run(args) -> dict:
    from meshharness import ATTACK_NET, Node, wait_until, watch

    import meshnode

    root = Path(tempfile.mkdtemp(prefix="attackbench"))
    # `python -m meshnode` puts its working directory first on sys.path: run the nodes from an
    # empty one, so they run the code this bench imports (PYTHONPATH, or the installed package)
    os.chdir(root)
    victim, honest = Node(root, "victim", env=ATTACK_NET), Node(root, "honest", env=ATTACK_NET)
    for node, other in ((victim, honest), (honest, victim)):
        node.cli("reputation", "set", other.did, "0.9")
    out: dict = {"code": str(Path(meshnode.__file__).resolve().parent.parent), "seconds": args.seconds,
                 "settle_s": args.settle, "goal_p99_ratio": GOAL_P99_RATIO}
    print(f"meshnode from {out['code']}", flush=True)
    try:
        victim.start()
        honest.set_bootstrap(victim)
        honest.start()
        victim.call("friend", {"did": honest.did})
        honest.call("friend", {"did": victim.did})

        def friend_ok() -> bool:
            return any(r["did"] == honest.did and r["liveness"] == "ok" for r in victim.try_call("peers") or [])
        wait_until(friend_ok, 60, "the victim to hear its friend")
        unloaded = watch(victim, honest, lambda: time.sleep(args.baseline))
        unloaded.pop("result")
        out["unloaded"] = unloaded
        print(f"{'unloaded':12} status p50/p99 {unloaded['status_ms_p50']}/{unloaded['status_ms_p99']} ms, "
              f"ping p50/p99 {unloaded['ping_ms_p50']}/{unloaded['ping_ms_p99']} ms, "
              f"cpu {unloaded['cpu_share']}, rss {unloaded['rss_peak_mib']} MiB", flush=True)
        out["attacks"] = {}
        for mode in args.attacks:
            if victim.proc.poll() is not None:
                out["attacks"][mode] = {"victim_exited": victim.proc.returncode}
                continue
            r = out["attacks"][mode] = one_attack(victim, honest, mode, args.seconds, args.settle, unloaded)
            a = r["attacker"]
            print(f"{mode:12} calm after {r['calm_after_s']} s; status p50/p99 {r['status_ms_p50']}/{r['status_ms_p99']} ms "
                  f"(x{r['status_p50_ratio']}/x{r['status_p99_ratio']}), ping p50/p99 {r['ping_ms_p50']}/"
                  f"{r['ping_ms_p99']} ms (x{r['ping_p50_ratio']}/x{r['ping_p99_ratio']}, {r['ping_failed']} failed), "
                  f"cpu {r['cpu_share']}, rss {r['rss_before_mib']}/{r['rss_peak_mib']}/{r['rss_after_mib']} MiB, "
                  f"friend not ok {r['friend_not_ok']}x, stored {r['junk_containers']} containers "
                  f"(+{r['junk_bytes_on_disk']} B; {r['stored_by_class']}), attacker served {a['served']} refused {a['refused']} "
                  f"identities {a['identities']}, new peer connects: {r['new_peer_connects']} "
                  f"{'ok' if r['within_goal'] else 'OVER GOAL'}", flush=True)
            print(f"{'':12} attacker: {json.dumps(a)}", flush=True)
        out["goal_met"] = bool(out["attacks"]) and all(r.get("within_goal") for r in out["attacks"].values())
        print(f"goal (p99 at most {GOAL_P99_RATIO}x unloaded, a new peer connects): "
              f"{'met' if out['goal_met'] else 'not met'}", flush=True)
    finally:
        for node in (victim, honest):
            node.stop()
            node.kill()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=25.0, help="how long each attack runs")
    parser.add_argument("--attacks", type=lambda s: [a for a in s.split(",") if a], default=list(ATTACKS),
                        help="which, comma-separated: " + ",".join(ATTACKS))
    parser.add_argument("--baseline", type=float, default=10.0, help="seconds of unloaded measurement")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds after each attack before RSS is read")
    parser.add_argument("--smoke", action="store_true",
                        help="tiny sizes: the bench runs end to end in seconds (the suite's smoke test)")
    args = parser.parse_args()
    if args.smoke:
        vars(args).update(SMOKE)
    unknown = set(args.attacks) - set(ATTACKS)
    if unknown:
        parser.error(f"unknown attacks: {', '.join(sorted(unknown))}")
    out = run(args)
    logging.disable(logging.CRITICAL)
    print(json.dumps({"bench": "attack", **out}))


if __name__ == "__main__":
    main()
