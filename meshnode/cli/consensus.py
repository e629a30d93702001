"""CLI commands for consensus: ``consensus vote|status|result|verify`` (CogConsensus).

They work on the database directly, whether or not a node runs (SQLite serialises
the writes). The rules are in protocols/cogconsensus.md; the logic is in
meshnode/consensus, which the running node calls too.
"""

from __future__ import annotations

import json
from pathlib import Path

from meshnode.cli.common import _config, _open_db, container_did, read_limited_file, terminal_safe
from meshnode.consensus.cogvote import DAY_MS, ConsensusError, Rule
from meshnode.records.consensus import cast_vote, publish_result, tally_stored, verify_stored
from meshnode.container import ContainerError, decode_container, now_ms
from meshnode.errors import MeshnodeError
from meshnode.home import open_identity
from meshnode.store.short_ids import ShortIdError

MAX_RESULT_FILE = 64 * 1024 * 1024


def _rule(args) -> Rule:
    if not 0 <= args.half_life_days <= 1e6:
        raise ConsensusError("bad_rule", "--half-life-days must be from 0 to 1000000")
    return Rule(args.decision, round(args.half_life_days * DAY_MS), args.min_voters, args.min_trust)


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
    key = open_identity(config)
    db = _open_db(config)
    try:
        vote = cast_vote(db, key, args.target, args.value, now_ms=now_ms(), decision=args.decision,
                         arguments=[{"reason": r} for r in args.argument], evidence=args.evidence)
    finally:
        db.close()
    print(vote.did)
    return 0


def cmd_status(args) -> int:
    config = _config(args)
    args.target = _target(config, args.target)
    db = _open_db(config)
    try:
        t = tally_stored(db, args.target, rule=_rule(args), at_ms=now_ms())
    finally:
        db.close()
    if args.json:
        print(json.dumps(t.to_plain(), indent=2))
        return 0
    o, r = t.outcome, t.rule
    need = f"quorum: {o.voters} of {r.min_voters} voters, trust {o.trust_sum:.3f} of {r.min_trust:g}"
    print(f"target:   {t.target}")
    print(f"decision: {r.decision}")
    print(f"state:    {o.state} ({need})")
    print(f"score:    {o.score:+.4f}")
    print(f"weights:  approve {o.approve:.4f}, reject {o.reject:.4f}, neutral {o.neutral:.4f}")
    for c in t.counted:
        print(f"  {c.ballot.value:+g}  trust {c.trust:.3f}  decay {c.decay:.3f}  {c.ballot.voter}")
        print(f"      {c.ballot.vote}")
    if t.excluded:
        print(f"not counted: {len(t.excluded)} vote(s)")
        for did, voter, why in t.excluded:
            print(terminal_safe(f"  {did} ({why})"))
    return 0


def cmd_result(args) -> int:
    config = _config(args)
    args.target = _target(config, args.target)
    key = open_identity(config)
    db = _open_db(config)
    try:
        result = publish_result(db, key, args.target, rule=_rule(args), now_ms=now_ms())
    finally:
        db.close()
    print(result.did)
    return 0


def cmd_verify(args) -> int:
    config = _config(args)
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
