"""CLI commands for consensus: ``consensus vote|status|result|verify`` (CogConsensus).

``vote``, ``status`` and ``result`` are the application's actions ``consensus_vote|tally|result``
(meshnode.app.actions.consensus), run by the running node or, with none, on the home's database in
this process (``cli.common.act``). ``verify`` reads the store and files only. The rules are in
protocols/cogconsensus.md; the logic is in meshnode/domain/consensus.
"""

from __future__ import annotations

import json
from pathlib import Path

from meshnode.base.config.command_line import config_of
from meshnode.faces.cli.common import _config, _open_db, act, container_did, read_limited_file, terminal_safe
from meshnode.domain.consensus.cogvote import DAY_MS, ConsensusError, Rule
from meshnode.records.consensus import verify_stored
from meshnode.base.container import ContainerError, decode_container, now_ms
from meshnode.base.errors import MeshnodeError
from meshnode.store.short_ids import ShortIdError

MAX_RESULT_FILE = 64 * 1024 * 1024


def _rule(args) -> dict:
    """The tally's rule as the actions take it (checked here first: a bad one is refused before
    any node is asked)."""
    if not 0 <= args.half_life_days <= 1e6:
        raise ConsensusError("bad_rule", "--half-life-days must be from 0 to 1000000")
    rule = Rule(args.decision, round(args.half_life_days * DAY_MS), args.min_voters, args.min_trust)
    return {"decision": rule.decision, "half_life_ms": rule.half_life_ms, "min_voters": rule.min_voters,
            "min_trust": rule.min_trust}


def _target(config, text: str) -> str:
    """What a vote is about: a DID as it is (a vote may be on any DID; the tally checks it),
    or the short id of a container held here, as a listing shows it."""
    if text.startswith("did:"):
        return text
    try:
        return container_did(config, text)
    except ShortIdError as exc:
        if exc.code != "bad_id":
            raise
        raise ConsensusError("bad_target", f"{text[:80]!r} is not a DID (did:<method>:<id>) nor the short id"
                                           " of a container held here") from None


# --- commands -------------------------------------------------------------------------


def cmd_vote(args) -> int:
    config = _config(args)
    args.target = _target(config, args.target)
    args.evidence = [_target(config, d) for d in args.evidence]
    vote = act(config, "consensus_vote", {"target": args.target, "value": args.value, "decision": args.decision,
                                          "arguments": list(args.argument), "evidence": args.evidence})
    print(vote["did"])
    return 0


def cmd_status(args) -> int:
    config = _config(args)
    args.target = _target(config, args.target)
    t = act(config, "consensus_tally", {"target": args.target, **_rule(args)})
    if args.json:
        print(json.dumps(t, indent=2))
        return 0
    r, w = t["rule"], t["weights"]
    need = f"quorum: {t['voters']} of {r['min_voters']} voters, trust {t['trust_sum']:.3f} of {r['min_trust']:g}"
    print(f"target:   {t['target_did']}")
    print(f"decision: {t['decision']}")
    print(f"state:    {t['state']} ({need})")
    print(f"score:    {t['score']:+.4f}")
    print(f"weights:  approve {w['approve']:.4f}, reject {w['reject']:.4f}, neutral {w['neutral']:.4f}")
    for v in t["votes"]:
        print(f"  {v['value']:+g}  trust {v['trust']:.3f}  decay {v['decay']:.3f}  {v['voter']}")
        print(f"      {v['vote']}")
    if t["excluded"]:
        print(f"not counted: {len(t['excluded'])} vote(s)")
        for e in t["excluded"]:
            print(terminal_safe(f"  {e['vote']} ({e['reason']})"))
    return 0


def cmd_result(args) -> int:
    config = _config(args)
    args.target = _target(config, args.target)
    result = act(config, "consensus_result", {"target": args.target, **_rule(args)})
    print(result["did"])
    return 0


def cmd_verify(args) -> int:
    # files are enough (anyone can check a result, no node needed): the home's settings if it has
    # any, never the refusal of a folder that is no node's home
    config = config_of(args)
    now = now_ms()
    given = [_container_file(Path(f), config, now) for f in args.vote]
    by_did = args.result.startswith("did:") or not Path(args.result).exists()
    if by_did and not args.result.startswith("did:"):  # not a file: the short id of a result held here?
        args.result = _held_result(config, args.result)
    result = None if by_did else _container_file(Path(args.result), config, now)
    # a DID is looked up in the store; a file needs none (the votes it lists may come as files)
    db = _open_db(config) if by_did or config.db_path.exists() else None
    try:
        if result is None:
            result = db.load_container(args.result, now_ms=now)
            if result is None:
                raise MeshnodeError("not_found", f"no container {args.result} in this node's store")
        verdict, view = verify_stored(db, result, now_ms=now, given=given)
    finally:
        if db is not None:
            db.close()
    if not verdict.ok:
        hint = " (give the vote's file with --vote)" if verdict.code == "missing_vote" else ""
        raise ConsensusError(verdict.code, f"{result.did} does not verify ({verdict.code}): {verdict.reason}{hint}")
    print(verdict.line())
    if view is not None:
        print(f"  {view.line()}")
    return 0


def _held_result(config, text: str) -> str:
    try:
        if config.db_path.exists():
            return container_did(config, text, "consensus result")
    except ShortIdError as exc:
        if exc.code != "bad_id":  # a short id of none held here, or of several
            raise
    raise MeshnodeError("not_found", f"{text} is neither a container file nor a container DID"
                                     " (nor the short id of one held here)")


def _container_file(path: Path, config, now: int):
    data = read_limited_file(path, MAX_RESULT_FILE)
    try:
        return decode_container(data, now_ms=now, limits=config.limits)
    except ContainerError as exc:
        raise MeshnodeError(exc.code, f"{path} is not a valid container ({exc.code}): {exc.reason}") from None
