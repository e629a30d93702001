"""The A2A face under a flood of strangers: does a new honest party still reach the person, and a known
party the agent?

    python bench/a2a.py [--addresses 50] [--per-address 3] [--rounds 3] [--smoke]

A running node (a scripted LLM that answers the known party's message) and A2A clients on distinct
loopback addresses (127.0.0.10, .11, ...: the kernel routes all of 127/8 to lo, and the face counts each
connection's peer address):

1. Baseline, no flood: an honest unknown party (127.0.1.x, another /24) sends a message: held? in how
   many ms; a known party (a token) sends one: delivered, and answered by the agent in how many ms.
2. The flood: ``--addresses`` addresses of one /24 (another /24 each round) each send ``--per-address`` messages (distinct
   claimed senders) at once; meanwhile the same honest party (a new address) and the known party
   send as in 1. Counted: held, refused by share (party, address, subnet, queue) and by rate limit,
   the Retry-After range of held_full ("raced": past the face's check together, refused by the
   handler's own: should be 0, the face checks and holds one message at a time); the honest party's and the known party's outcome and times, against 1.
   Steps 1 and 2 run ``--rounds`` times (the held queue cleared between rounds).
``--smoke``: 50 addresses x 1 message, one round: the bench end to end in seconds.

Prints a table and writes bench/results/a2a.json; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from llmharness import ScriptedLLM, command_block, distinct_answers  # noqa: E402
from meshharness import Node, wait_until  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "a2a.json"
RPC = "/a2a"


def message(text: str, sender: str | None, blocking: bool = True) -> dict:
    """A message/send as an A2A 0.3 client sends it (tests/golden/a2a_v03)."""
    msg = {"kind": "message", "messageId": f"m-{time.monotonic_ns()}", "role": "user",
           "parts": [{"kind": "text", "text": text}], **({"metadata": {"sender": sender}} if sender else {})}
    params = {"message": msg, **({} if blocking else {"configuration": {"blocking": False}})}
    return {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": params}


async def post(url: str, body: dict, source: str, token: str | None = None) -> tuple[int, dict, dict, float]:
    """``body`` to /a2a from loopback address ``source``: status, JSON, headers, ms taken."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    t = time.perf_counter()
    async with httpx.AsyncClient(transport=httpx.AsyncHTTPTransport(local_address=source), headers=headers,
                                 timeout=120) as http:
        response = await http.post(url + RPC, json=body)
    return response.status_code, response.json(), dict(response.headers), (time.perf_counter() - t) * 1000


class Bench:
    def __init__(self, node: Node, llm: ScriptedLLM, token: str):
        self.node, self.llm, self.token = node, llm, token
        self.url = node.web_url.rstrip("/")
        self.honest_n = 0

    async def honest(self) -> dict:
        """A new honest unknown party, on an address of its own in another /24."""
        self.honest_n += 1
        status, body, _, ms = await post(self.url, message(f"hello, I am honest party {self.honest_n}",
                                                           f"did:key:zHonest{self.honest_n}"),
                                         f"127.0.1.{self.honest_n}")
        held = status == 200 and body.get("result", {}).get("status", {}).get("state") == "submitted"
        return {"held": held, "status": status, "ms": round(ms, 1)}

    async def known(self, n: int) -> dict:
        """The known party's message, delivered at once (the task back), and the agent's answer to it."""
        text = f"known party question {n}: what is {n}+{n}?"
        t = time.perf_counter()
        status, body, _, _ = await post(self.url, message(text, None, blocking=False), "127.0.0.2", self.token)
        if status != 200 or not body.get("result", {}).get("id", "").startswith("m-"):
            return {"answered": False, "status": status, "ms": None}
        task_id = body["result"]["id"]
        self.llm.reply_when(text, "answering. " + command_block({"cmd_id": f"k{n}", "type": "note_add", "args": {
            "text": f"{2 * n}", "reply_to": task_id[2:]}}))
        await trio.to_thread.run_sync(self.node.call, "mind_resume", {})
        while True:
            _, got, _, _ = await post(self.url, {"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
                                                 "params": {"id": task_id}}, "127.0.0.2", self.token)
            if got.get("result", {}).get("status", {}).get("state") == "completed":
                return {"answered": True, "status": status, "ms": round((time.perf_counter() - t) * 1000, 1)}
            if time.perf_counter() - t > 90:
                return {"answered": False, "status": status, "ms": None}
            await trio.sleep(0.5)

    async def flood(self, addresses: int, per_address: int, round_no: int) -> dict:
        outcomes: list[tuple[int, dict, dict]] = []

        async def one(i: int) -> None:
            for k in range(per_address):
                status, body, headers, _ = await post(self.url, message(f"flood {round_no}.{i}.{k}", f"flooder-{i}-{k}"),
                                                      f"127.0.{10 + round_no}.{10 + i}")
                outcomes.append((status, body, headers))
        during: dict = {}

        async def meanwhile() -> None:
            await trio.sleep(0)  # the flood's first requests are on their way
            during["honest"] = await self.honest()
            during["known"] = await self.known(1000 + round_no)
        async with trio.open_nursery() as nursery:
            for i in range(addresses):
                nursery.start_soon(one, i)
            nursery.start_soon(meanwhile)
        refused: dict[str, int] = {}
        retry = []
        for status, body, headers in outcomes:
            if status == 200 and "error" in body:  # raced past the face's check: the handler's own (same cap)
                refused["raced"] = refused.get("raced", 0) + 1
            elif status == 429:
                data = body.get("error", {}).get("data", {})
                kind = data.get("share", data.get("type", "?"))
                refused[kind] = refused.get(kind, 0) + 1
                if data.get("type") == "held_full":
                    retry.append(int(headers.get("retry-after", 0)))
        held = sum(1 for s, b, _ in outcomes if s == 200 and b.get("result", {}).get("status", {}).get("state")
                   == "submitted")
        return {"sent": len(outcomes), "held": held, "refused": refused,
                "retry_after_s": [min(retry), max(retry)] if retry else None, **during}


def run(root: Path, addresses: int, per_address: int, rounds: int) -> dict:
    llm = ScriptedLLM(root, "main", distinct_answers(400, lambda i, text: []))
    node = Node(root, "ada", env={"MESHNODE_COGNITION_PAUSE_SECONDS": "0.2", "MESHNODE_A2A_BURST": str(per_address)})
    token = node.cli("a2a", "token", "add", "friend").strip()
    node.cli("llm", "add", "main", "--url", llm.url, "--model", "scripted")
    try:
        node.start()
        wait_until(lambda: (node.try_call("status") or {}).get("cognition", {}).get("ticks", 0) >= 1, 60, "a tick")
        bench = Bench(node, llm, token)
        baseline, flooded = [], []
        for r in range(rounds):
            node.call("mind_pause", {})
            baseline.append({"honest": trio.run(bench.honest), "known": trio.run(bench.known, r)})
            node.call("mind_pause", {})
            flooded.append(trio.run(bench.flood, addresses, per_address, r))
            node.cli("a2a", "reject", "--all")  # the next round starts from an empty queue
        return {"baseline": baseline, "flood": flooded}
    finally:
        node.kill()
        llm.stop()


def summary(result: dict, addresses: int, per_address: int) -> dict:
    def med(values):
        values = [v for v in values if v is not None]
        return round(statistics.median(values), 1) if values else None
    base, flood = result["baseline"], result["flood"]
    out = {"bench": "a2a", "addresses": addresses, "per_address": per_address, "rounds": len(flood),
           "flood_sent": sum(f["sent"] for f in flood), "flood_held": sum(f["held"] for f in flood),
           "flood_refused": {k: sum(f["refused"].get(k, 0) for f in flood) for k in
                             sorted({k for f in flood for k in f["refused"]})},
           "retry_after_s": [min(f["retry_after_s"][0] for f in flood if f["retry_after_s"]),
                             max(f["retry_after_s"][1] for f in flood if f["retry_after_s"])]
           if any(f["retry_after_s"] for f in flood) else None,
           "honest_held_baseline": sum(b["honest"]["held"] for b in base),
           "honest_held_flood": sum(f["honest"]["held"] for f in flood),
           "honest_ms_baseline": med([b["honest"]["ms"] for b in base]),
           "honest_ms_flood": med([f["honest"]["ms"] for f in flood]),
           "known_answered_baseline": sum(b["known"]["answered"] for b in base),
           "known_answered_flood": sum(f["known"]["answered"] for f in flood),
           "known_answer_ms_baseline": med([b["known"]["ms"] for b in base]),
           "known_answer_ms_flood": med([f["known"]["ms"] for f in flood])}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--addresses", type=int, default=50)
    parser.add_argument("--per-address", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="50 addresses x 1 message, one round")
    args = parser.parse_args()
    if args.smoke:
        args.per_address, args.rounds = 1, 1
    if not 1 <= args.addresses <= 200 or not 1 <= args.rounds <= 100:
        parser.error("--addresses is 1 to 200 (127.0.R.10 to 127.0.R.209), --rounds 1 to 100")
    with tempfile.TemporaryDirectory(prefix="bench-a2a-") as tmp:
        result = run(Path(tmp), args.addresses, args.per_address, args.rounds)
    out = summary(result, args.addresses, args.per_address)
    print(f"flood: {out['flood_sent']} messages from {args.addresses} addresses of one /24 ({args.rounds} round(s)):"
          f" {out['flood_held']} held, refused {out['flood_refused']}, held_full's Retry-After"
          f" {out['retry_after_s']} s")
    print(f"{'':28} {'baseline':>12} {'during flood':>14}")
    print(f"{'honest unknown party held':28} {out['honest_held_baseline']:>10}/{args.rounds}"
          f" {out['honest_held_flood']:>12}/{args.rounds}")
    print(f"{'  its message/send, ms':28} {out['honest_ms_baseline']!s:>12} {out['honest_ms_flood']!s:>14}")
    print(f"{'known party answered':28} {out['known_answered_baseline']:>10}/{args.rounds}"
          f" {out['known_answered_flood']:>12}/{args.rounds}")
    print(f"{'  sent to answer, ms':28} {out['known_answer_ms_baseline']!s:>12} {out['known_answer_ms_flood']!s:>14}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({**out, "raw": result}, indent=2) + "\n")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
