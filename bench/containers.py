"""Container throughput beside raw Ed25519, measured in the same run.

Prints, for a small and a larger note: containers signed+encoded per second
and decoded+verified per second, each next to PyNaCl's raw sign / verify rate
over a message of the same size, and the ratios (goals: decode+verify >= 0.8
of raw verify, sign+encode >= 0.6 of raw sign). The last line is one JSON
object. Each figure is the best of several rounds, rounds interleaved, so a
busy moment on the machine hurts all figures alike.

    python bench/containers.py [--seconds 0.5] [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import nacl
from nacl.signing import SigningKey

from meshnode.container import build_container, decode_container, now_ms
from meshnode.identity.keys import NodeKey


def rate(fn, seconds: float) -> float:
    n, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(50):
            fn()
        n += 50
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - start)


def bench_case(name: str, payload: dict, seconds: float, rounds: int) -> dict:
    key = NodeKey(bytes(range(32)))
    t = now_ms()
    sample = build_container(key, "note", payload, timestamp_ms=t, meta={"created_by": "AGENT"})
    data = sample.to_bytes()
    signed_len = len(sample.to_bytes()) - 80  # about the size of the signed bytes
    message = bytes(signed_len)
    sk = SigningKey(bytes(range(32)))
    vk = sk.verify_key
    sig = sk.sign(message).signature

    def sign_encode():
        build_container(key, "note", payload, timestamp_ms=t, meta={"created_by": "AGENT"}).to_bytes()

    def decode_verify():
        decode_container(data, now_ms=t)

    best = {"raw_sign": 0.0, "sign_encode": 0.0, "raw_verify": 0.0, "decode_verify": 0.0}
    for _ in range(rounds):
        best["raw_sign"] = max(best["raw_sign"], rate(lambda: sk.sign(message), seconds))
        best["sign_encode"] = max(best["sign_encode"], rate(sign_encode, seconds))
        best["raw_verify"] = max(best["raw_verify"], rate(lambda: vk.verify(message, sig), seconds))
        best["decode_verify"] = max(best["decode_verify"], rate(decode_verify, seconds))
    return {
        "case": name,
        "container_bytes": len(data),
        **{k: round(v) for k, v in best.items()},
        "sign_ratio": round(best["sign_encode"] / best["raw_sign"], 3),
        "verify_ratio": round(best["decode_verify"] / best["raw_verify"], 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=0.5, help="length of one timed run")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; the best is kept")
    args = parser.parse_args()
    small = {"text": "Hello from meshnode #demo", "topic": "chat", "source": "cli", "audience": "friends",
             "priority": 0, "hashtags": ["demo"]}
    large = dict(small, text="Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 18)
    results = [bench_case("note-small", small, args.seconds, args.rounds),
               bench_case("note-1KiB", large, args.seconds, args.rounds)]
    print(f"{'case':12} {'bytes':>6} {'raw sign/s':>11} {'sign+enc/s':>11} {'ratio':>6}"
          f" {'raw verify/s':>13} {'dec+verify/s':>13} {'ratio':>6}")
    for r in results:
        print(f"{r['case']:12} {r['container_bytes']:>6} {r['raw_sign']:>11} {r['sign_encode']:>11}"
              f" {r['sign_ratio']:>6} {r['raw_verify']:>13} {r['decode_verify']:>13} {r['verify_ratio']:>6}")
    print("goals: sign+encode >= 0.6 x raw sign; decode+verify >= 0.8 x raw verify")
    print(json.dumps({"bench": "containers", "python": platform.python_version(), "pynacl": nacl.__version__,
                      "goal_sign_ratio": 0.6, "goal_verify_ratio": 0.8, "results": results}))


if __name__ == "__main__":
    main()
