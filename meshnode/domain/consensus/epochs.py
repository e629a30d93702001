"""Committee epochs: the next committee and its weights, derived from published trust.

A committee changes only by deciding a *committee value*: the deterministic
CBOR map ``{"kind": "committee", "epoch": e, "statements": [trust container
DIDs]}``. Every honest node derives the same next committee from the same
signed statements, so no node has to be believed:

1. only statements signed by members of the current committee count, and of
   those only each signer's newest about each subject (by timestamp, then DID);
2. a subject's trust is the mean of those scores weighted by the signers'
   current voting weights;
3. weights follow from trust (``committee.weights_from_trust``): below the
   consensus floor, no weight, so identities with no earned trust (Sybils)
   never enter, and an equivocator whose trust was cut leaves.

A value is valid for a node when its epoch is the next one, the node holds
and has verified every statement it lists, and the derived committee is not
empty; otherwise the node prevotes nil (and fetches what it lacks). Pure.
"""

from __future__ import annotations

from typing import Iterable

from meshnode.domain.consensus.committee import Committee, weights_from_trust
from meshnode.base.container import Container, cbor
from meshnode.base.errors import MeshnodeError
from meshnode.domain.reputation.statements import Statement, newest_statements

COMMITTEE_KIND = "committee"
MAX_STATEMENTS = 4096


class EpochError(MeshnodeError):
    """A committee value that cannot be used."""


def committee_value(epoch: int, statements: Iterable[str]) -> bytes:
    dids = sorted(set(statements))
    if not dids or len(dids) > MAX_STATEMENTS:
        raise EpochError("bad_committee_value", f"a committee value lists 1 to {MAX_STATEMENTS} trust statements")
    return cbor.encode({"kind": COMMITTEE_KIND, "epoch": epoch, "statements": dids})


def parse_committee_value(value: bytes) -> tuple[int, list[str]] | None:
    """(epoch, statement DIDs) for a committee value; None for any other value."""
    try:
        data, _ = cbor.decode(value, max_bytes=len(value) + 1, max_depth=3)
    except MeshnodeError:
        return None
    if type(data) is not dict or data.get("kind") != COMMITTEE_KIND:
        return None
    epoch, dids = data.get("epoch"), data.get("statements")
    if type(epoch) is not int or epoch < 1 or type(dids) is not list or not 0 < len(dids) <= MAX_STATEMENTS \
            or any(type(d) is not str or len(d) > 128 for d in dids) or dids != sorted(set(dids)):
        raise EpochError("bad_committee_value", "a committee value has an epoch and sorted statement DIDs")
    return epoch, dids


def epoch_of(committee: Committee) -> int:
    return int(committee.id.split("-", 1)[0][1:])


def derive(current: Committee, statements: Iterable[Container], epoch: int) -> Committee:
    """The committee of ``epoch`` from verified ``trust`` containers (see the module doc).
    Expiry is not checked here: the decided value fixes the set of statements, and a
    clock-dependent rule would let nodes derive different committees."""
    if epoch != epoch_of(current) + 1:
        raise EpochError("wrong_epoch", f"the next epoch is {epoch_of(current) + 1}, not {epoch}")
    said = []
    for c in statements:
        p = c.payload
        if c.cls != "trust" or not c.known_class or type(p) is not dict or p["agent_did"] == c.sender_did:
            raise EpochError("bad_statement", f"{c.did} is not a trust statement about another agent")
        if current.weight(c.sender_did) > 0:
            said.append(Statement(c.sender_did, p["agent_did"], float(p["total_trust_score"]), c.timestamp_ms,
                                  c.did, p.get("basis", "direct")))
    sums: dict[str, list[float]] = {}
    for signer, scores in newest_statements(said).items():
        for subject, score in scores.items():
            acc = sums.setdefault(subject, [0.0, 0.0])
            acc[0] += current.weight(signer) * score
            acc[1] += current.weight(signer)
    trust = {subject: num / den for subject, (num, den) in sums.items() if den > 0}
    weights = weights_from_trust(trust)
    if not weights:
        raise EpochError("empty_committee", "no one has enough trust to sit on the next committee")
    return Committee.of(weights, epoch=epoch)
