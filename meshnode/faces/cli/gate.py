"""The person's side of the action gate: review drafts, commit, roll back, answer confirmations.

    meshnode drafts list [--diff] [--all]  the agent's open drafts (and what its reflection said)
    meshnode drafts accept|reject PATH...  (or --all: the pending ones; never a rejected one)
    meshnode drafts edit PATH --from FILE  replace a draft's content with your own
    meshnode drafts commit -m REASON       write the accepted drafts, all or nothing, after a snapshot
    meshnode snapshots list|show ID|rollback ID
    meshnode confirm list|approve ID|reject ID
    meshnode gate tools [--openai]         the tools and their risk levels
    meshnode gate reset-limit              give the agent a fresh budget of tool calls

Each is an action of the application layer (meshnode.app.actions.gate), for the person at the
CLI: through the running node's control socket, or, with the node stopped, on the home's
database and workspace; a running node sees the answers at its next tick.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

from meshnode.faces.cli.common import _config, act, print_fields, print_rows, read_limited_file, terminal_safe
from meshnode.engines.gate import GateError
from meshnode.engines.gate import setup as gate_setup
from meshnode.engines.gate.tools import TOOLS, openai_tools
from meshnode.records.gate import drafts


def _run(args, name: str, given: dict):
    """The gate's action ``name`` for the person at the CLI (the workspace's jail built here only
    when no node runs)."""
    config = _config(args)
    return act(config, name, given, on_home=lambda: {"jail": gate_setup.jail(config)})


def cmd_drafts_list(args) -> int:
    listed = _run(args, "drafts", {"rejected": args.all})
    if args.json:
        print(json.dumps(listed, indent=2))
        return 0
    submitted, rows = listed["submission"], listed["drafts"]
    if submitted:
        state = "ready" if submitted["ready"] else "NOT ready"
        print(terminal_safe(f"the agent submitted these as {state}: {submitted['summary']}"))
        print(terminal_safe(f"its reflection: {submitted['reflection'].splitlines()[0] if submitted['reflection'] else ''}"))
    if not rows:
        print("(no open drafts)")
    for r in rows:
        what = "delete" if r["deleted"] else "change"
        print(terminal_safe(f"{r['status']:9} {what:6} {r['path']}{'  CONFLICT: changed since drafted' if r['conflict'] else ''}"))
        if args.diff:
            print(terminal_safe(r["diff"], keep_newlines=True))
    if listed["rejected_hidden"]:
        print(f"({listed['rejected_hidden']} rejected, not shown: --all shows them; the next commit discards them)")
    return 0


def cmd_drafts_decide(args) -> int:
    """Accepting takes only drafts whose content is what `drafts list` last showed; others are
    named, so the person looks again (the agent may have changed them in between)."""
    if bool(args.all) == bool(args.paths):
        raise GateError("bad_arguments", f"name the drafts to {args.decision}, or give --all (not both)")
    result = _run(args, "drafts_decide", {"decision": args.decision, "paths": None if args.all else args.paths})
    print(f"{args.decision}ed: {', '.join(result['decided']) or '(nothing)'}")
    if result["changed_since_listed"]:
        print(f"not accepted, changed since you listed them: {', '.join(result['changed_since_listed'])};"
              " run `meshnode drafts list --diff` again")
        return 1
    return 0


def cmd_drafts_edit(args) -> int:
    content = read_limited_file(Path(args.source), drafts.MAX_DRAFT_BYTES)
    row = _run(args, "drafts_edit", {"path": args.path, "content_base64": base64.b64encode(content).decode("ascii")})
    print(f"edited {row['path']} ({row['size']} bytes; still {row['status']})")
    return 0


def cmd_drafts_commit(args) -> int:
    snapshot_id = _run(args, "drafts_commit", {"message": args.message})["snapshot"]
    print(f"committed; snapshot {snapshot_id} (undo with `meshnode snapshots rollback {snapshot_id}`)")
    return 0


def cmd_snapshots_list(args) -> int:
    rows = _run(args, "snapshots", {})
    print_rows(args, rows, lambda r: f"{r['id']:5}  {r['reason']}  {', '.join(r['paths'])[:200]}")
    return 0


def cmd_snapshots_show(args) -> int:
    print_fields(args, _run(args, "snapshot_show", {"id": args.id}))
    return 0


def cmd_snapshots_rollback(args) -> int:
    new_id = _run(args, "snapshot_rollback", {"id": args.id})["before"]
    print(f"restored snapshot {args.id}; the state before is snapshot {new_id}")
    return 0


def cmd_confirm_list(args) -> int:
    rows = _run(args, "confirmations", {"all": args.all})
    # each request whole: a person approves exactly what they read
    print_rows(args, rows, lambda r: f"{r['id']:5}  {r['status']:8} {r['tool']}"
                                     f" {json.dumps(r['args'], ensure_ascii=False)}  ({r['reason']})")
    return 0


def cmd_confirm_decide(args) -> int:
    row = _run(args, "confirm_decide", {"id": args.id, "approve": args.approve})
    print(f"request {row['id']} {row['status']}; a running node acts on it at its next tick")
    return 0


def cmd_tools(args) -> int:
    if args.openai:
        print(json.dumps(openai_tools(), indent=2))
        return 0
    listing = act(_config(args), "gate_tools", {}, on_home=lambda: {"tools": TOOLS})
    for t in listing["tools"]:
        print(f"{t['risk']:12} {t['name']:13} {t['summary']}")
    for o in listing["outbound"]:  # sends out of the node: [gate] outbound_confirm
        print(f"{o['risk']:12} {o['kind']:13} {o['what']} ({o['command']}):"
              f" {'asks a person first' if o['asks_first'] else 'goes at once'}")
    return 0


def cmd_reset_limit(args) -> int:
    _run(args, "gate_reset_limit", {})
    print("the agent's budget of tool calls starts again at its next tick")
    return 0
