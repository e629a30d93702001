"""CogConsensus with the node's store: the votes it holds on a target, its tally, its vote cast,
its result published and a result checked against what it holds.

The same calls serve the running node and the CLI. Unlike :mod:`meshnode.domain.consensus.result`
and :mod:`meshnode.domain.consensus.cogvote` (pure), this reads and writes a ``Database``.
"""

from __future__ import annotations

from typing import Iterable

from meshnode.domain.consensus.cogvote import ConsensusError, Rule, Tally, ballot_of, make_vote, tally
from meshnode.domain.consensus.result import Verdict, View, build_result, compare_view, read_claim, verify_result
from meshnode.base.container import Container
from meshnode.base.container.schema import did as did_check
from meshnode.base.identity.keys import NodeKey
from meshnode.store.database import sql_errors
from meshnode.store.trust import trust_scores


def votes_on(db, target: str, *, now_ms: int) -> list[Container]:
    """The vote containers in ``db`` that reply to ``target`` (HMP: ``related.in_reply_to``),
    each verified again as it is read. A vote without that link is valid but not found here."""
    with sql_errors("reading votes"):
        rows = db.conn.execute(
            "SELECT l.source_did FROM container_links l JOIN containers c ON c.did = l.source_did"
            " WHERE l.target_did = ? AND l.relation = 'in_reply_to' AND c.class = 'vote' ORDER BY l.source_did",
            (target,)).fetchall()
    return [c for (did,) in rows if (c := db.load_container(did, now_ms=now_ms)) is not None]


def holds(db, did: str) -> bool:
    """Whether ``db`` holds the container ``did``."""
    with sql_errors("looking a container up"):
        return db.conn.execute("SELECT 1 FROM containers WHERE did = ?", (str(did),)).fetchone() is not None


def load_votes(db, dids: Iterable[str], *, now_ms: int) -> dict[str, Container | None]:
    """The named containers from ``db`` (None for those it does not hold), verified again."""
    return {did: db.load_container(did, now_ms=now_ms) for did in dict.fromkeys(dids)}


def tally_stored(db, target: str, *, rule: Rule, at_ms: int) -> Tally:
    """This node's tally of ``target``: the votes it holds, its trust in their voters."""
    if did_check(target):  # a vote targets a DID: any other text has no votes, say so instead of "pending"
        raise ConsensusError("bad_target", f"{str(target)[:80]!r} is not a DID (did:<method>:<id>): "
                                           f"give the DID of the container voted on")
    votes = votes_on(db, target, now_ms=at_ms)
    return tally(votes, target, trust=trust_scores(db.conn, {c.sender_did for c in votes}), at_ms=at_ms, rule=rule)


def cast_vote(db, key: NodeKey, target: str, value: int, *, now_ms: int, decision: str = "general",
              arguments: list[dict] | None = None, evidence: list[str] | None = None,
              asked_by: dict | None = None) -> Container:
    """Sign and store this node's vote on ``target``. A vote that revises an earlier one names it
    in ``previous_version`` and is timestamped after it, whatever the clock says, so it counts.
    ``asked_by``: who asked for it (an actor's row), recorded beside it (store.provenance).

    The target must be a container this node holds (issue 35): a vote on a DID no one can read
    would be signed, synced to every peer and counted by each tally, on nothing. A container not
    yet here arrives by sync (or, on a running node, ``fetch``); the vote waits for it."""
    if not holds(db, target):
        raise ConsensusError("unknown_target", f"no container {str(target)[:80]} on this node: a vote is on a"
                                               " container held here (written here or arrived from a peer);"
                                               " vote once it is here")
    current = None
    for c in votes_on(db, target, now_ms=now_ms):
        try:
            b = ballot_of(c)
        except ConsensusError:
            continue  # not a well-formed vote: it casts nothing
        if b.voter == key.did and b.target == target and b.decision == decision:
            if current is None or b.newer_than(current):
                current = b
    at = now_ms if current is None else max(now_ms, current.timestamp_ms + 1)
    vote = make_vote(key, target, value, now_ms=at, decision=decision, arguments=arguments, evidence=evidence,
                     replaces=None if current is None else [current.vote])
    db.put_container(vote, received_at_ms=now_ms, local=_asked(asked_by))
    return vote


def publish_result(db, key: NodeKey, target: str, *, rule: Rule, now_ms: int,
                   asked_by: dict | None = None) -> Container:
    """Tally ``target`` now, then sign and store the result (``asked_by`` as for ``cast_vote``)."""
    result = build_result(key, tally_stored(db, target, rule=rule, at_ms=now_ms))
    db.put_container(result, received_at_ms=now_ms, local=_asked(asked_by))
    return result


def _asked(asked_by: dict | None) -> dict | None:
    return {"asked_by": asked_by} if asked_by else None


def verify_stored(db, result: Container, *, now_ms: int,
                  given: Iterable[Container] = ()) -> tuple[Verdict, View | None]:
    """Verify ``result`` against the votes ``given`` (verified containers, from files) and those
    ``db`` holds; ``db`` None: the given votes only, as anyone without a node can. When it
    holds and there is a store, also this node's own view."""
    try:
        listed = read_claim(result).vote_dids
    except ConsensusError as exc:
        return Verdict(False, exc.code, exc.reason), None
    wanted = listed + list(result.related.get("depends_on", []))
    held = load_votes(db, wanted, now_ms=now_ms) if db is not None else {}
    by_did = {c.did: c for c in given}
    verdict = verify_result(result, {did: held.get(did) or by_did.get(did) for did in wanted})
    if not verdict.ok or db is None:
        return verdict, None
    claim = verdict.claim
    local = votes_on(db, claim.target, now_ms=now_ms)
    voters = {c.sender_did for c in local} | {e.voter for e in claim.entries}
    return verdict, compare_view(claim, local, trust_scores(db.conn, voters))
