"""CLI for binding decisions (MeshConsensus): ``consensus propose|decisions|committee``.

They talk to the running node, which runs the committee protocol; decisions
already stored can be listed without one (``act``: the same action either way).
"""

from __future__ import annotations

from meshnode.faces.cli.common import _ask_node, _config, act, agents_named, load_names, print_fields, print_rows, who
from meshnode.base.errors import MeshnodeError


def cmd_propose(args) -> int:
    if not 0 <= args.wait <= 50:
        raise MeshnodeError("bad_request", "--wait must be from 0 to 50 seconds")
    config = _config(args)
    result = _ask_node(config, "consensus_propose", {"value": args.value, "wait_seconds": args.wait})
    print(_outcome(result))
    return 0


def _outcome(result: dict) -> str:
    """Where a submitted value stands: its height once committed, else that it is not known yet."""
    vid = f"value id {result['value_id'][:16]}..."
    if result.get("status") == "committed":
        how = "already decided" if result.get("already_decided") else "committed"
        return f"{how} at height {result['height']}, index {result.get('index')} in its block ({vid})"
    return (f"submitted ({vid}); not committed yet, so its height is not known (the committee is at height "
            f"{result['working_height']}): see `meshnode consensus decisions`")


def cmd_decisions(args) -> int:
    config = _config(args)
    rows = act(config, "consensus_decisions", {"limit": args.limit})
    print_rows(args, rows, _decision_line)
    return 0


def _decision_line(r: dict) -> str:
    at = f"height {r['height']:>5} #{r.get('index', 0):<3}"
    if r["status"] != "committed":
        return f"{at}  PROVISIONAL emergency_consensus: {r['value']}"
    note = f"  (emergency decision {r['emergency']['revisited']})" if r["emergency"] else ""
    return f"{at}  round {r['round']}  {r['value']}{note}"


def cmd_next_committee(args) -> int:
    config = _config(args)
    result = _ask_node(config, "consensus_next_committee")
    print(f"next committee {_outcome(result)}")
    return 0


def cmd_committee(args) -> int:
    """The committee's state; its members and last signers by name (``--did``: whole DIDs;
    ``--json``: as the node gives them, plus ``names``: DID -> name)."""
    config = _config(args)
    status = _ask_node(config, "consensus_status")
    dids = [*(status.get("members") or {}), *(status.get("last_signers") or [])]
    if args.json:
        print_fields(args, {**status, "names": {n["did"]: n["name"] for n in agents_named(config, dids)}} if dids
                     else status)
        return 0
    if dids:
        load_names(config)
    if "members" in status:
        status["members"] = {who(d): weight for d, weight in status["members"].items()}
    if "last_signers" in status:
        status["last_signers"] = [who(d) for d in status["last_signers"]]
    print_fields(args, status)
    return 0
