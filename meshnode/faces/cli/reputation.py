"""CLI commands for reputation: ``reputation list``, ``reputation show DID`` and ``reputation set``.

They are the application's reputation actions (by the running node, or on the home's database
when none runs); only ``set`` changes anything: a person's judgement, applied as one event of
the evidence model (reputation/manual.py). Scores are shown
as they are now: decayed to the present, direct where this node has evidence,
else transitive through the statements its trusted peers published.
"""

from __future__ import annotations

from meshnode.faces.cli.common import _config, act, agent_did, print_json, print_rows, terminal_safe


def cmd_set(args) -> int:
    did = agent_did(_config(args), args.did)
    r = act(_config(args), "reputation_set", {"did": did, "score": args.score, "reason": args.reason or ""})
    held = f" (held at {r['score']:.3f} by an equivocation cap)" if r["capped"] else ""
    print(terminal_safe(f"trust in {r['did']} set to {args.score:.3f}{held}"))
    return 0


def _who(r: dict) -> str:
    return f"{r['name']} ({r['did']})" if r.get("name") else r["did"]


def cmd_list(args) -> int:
    rows = act(_config(args), "reputation", {})
    print_rows(args, rows, _line)
    return 0


def _line(r: dict) -> str:
    flags = f"  capped until {r['capped_until']}" if r["capped_until"] else ""
    via = f" via {' > '.join(r['via'])}" if r["via"] else ""
    return f"{r['score']:.3f}  {r['trust_level']:6}  {r['basis']:10}  {_who(r)}{via}{flags}"


def cmd_show(args) -> int:
    did = agent_did(_config(args), args.did)
    d = act(_config(args), "reputation_show", {"did": did})
    if args.json:
        print_json(d)
        return 0
    print(terminal_safe(f"agent:        {_who(d)}"))
    if d["score"] is None:
        print("trust:        unknown (only statements this node does not use)")
    else:
        via = f" via {' > '.join(d['via'])}" if d["via"] else ""
        print(terminal_safe(f"trust:        {d['score']:.3f} ({d['trust_level']}, {d['basis']}{via})"))
        print(f"gossip score: {d['gossip_score']}")
    if d["capped_until"]:
        print(f"capped until: {d['capped_until']} (equivocation)")
    if d["counts"]:
        print("evidence:     " + ", ".join(f"{k} {n}" for k, n in d["counts"].items()))
    for e in d["evidence"]:
        print(terminal_safe(f"  {e['at']}  {e['kind']}  {e['ref']}"))
    if d["published"]:
        p = d["published"]
        print(f"published:    {p['score']:.3f} at {p['at']}  {p['container_did']}")
    if d["statements"]:
        print("statements by others:")
        for s in d["statements"]:
            who = f"{s['signer_name']} ({s['signer']})" if s["signer_name"] else s["signer"]
            print(terminal_safe(f"  {s['score']:.3f}  {s['basis']:10}  {s['at']}  {who}"))
    if d["history"]:
        print("history:")
        for h in d["history"]:
            print(terminal_safe(f"  {h['at']}  {h['score']:.3f}  {h['notes'] or ''}"))
    return 0
