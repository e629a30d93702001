"""Step 8 of GMP: admission of goal, task and workflow_entry 1.1 containers (gmp.md section 4).

Admission reads only the container and the containers it names (and their lineage roots),
through a :class:`Held` that answers for admitted containers. So the outcome never depends
on arrival order: a container naming something not held yet is *pending* (with the DIDs
to fetch) and is judged again when they arrive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from meshnode.domain.consensus.cogvote import ConsensusError
from meshnode.domain.consensus.result import read_claim, verify_result
from meshnode.base.container import Container, parse_ms
from meshnode.base.container.gmp_classes import CLASSES as GMP_CLASSES
from meshnode.base.container.gmp_classes import GOAL_ENTRY_KINDS, TASK_TERMINAL, VERSION
from meshnode.base.errors import AdmissionRefused
from meshnode.domain.gmp.held import MemoryHeld  # noqa: F401  (part of this module's API)
from meshnode.domain.gmp.task_state import task_state
CODES = {
    "gmp_not_authorized": "the signer is neither creator, assignee of every parent, nor an admissible steward",
    "gmp_bad_transition": "a status change not allowed (gmp.md section 3)",
    "gmp_field_locked": "an assignee or steward changed a field only the creator may change",
    "gmp_no_acceptance": "an added assignee has no valid acceptance in related.agreed",
    "gmp_against_decision": "the assignment contradicts the task's delegation_rule or the binding decision",
    "gmp_link_changed": "related.in_reply_to differs from the first version's",
    "gmp_cross_lineage": "a named parent, goal or task is of another class or lineage",
    "gmp_bad_creator": "payload.creator is not the lineage creator",
    "gmp_takeover_early": "a steward's takeover before the parent is overdue (gmp.md section 8)",
    "gmp_bad_related": "related has not the shape the class needs (in_reply_to items, contradicts)",
    "gmp_unreadable": "the payload is not a CBOR map (binary or encrypted): admission cannot read it",
}


class GmpRefused(AdmissionRefused):
    """A GMP container refused at admission: ``code`` is one of :data:`CODES`."""

    def __init__(self, code: str, reason: str):
        assert code in CODES, code
        super().__init__(code, reason)


def is_gmp(c: Container) -> bool:
    return c.cls in GMP_CLASSES and c.head.get("class_version") == VERSION


class Held(Protocol):
    def get(self, did: str) -> Container | None:
        """An admitted container held here (any class), or None."""

    def root(self, did: str) -> str | None:
        """The lineage root (first version DID) of a held goal or task version, or None."""

    # Optional (MeshConsensus delegation, gmp.md 6.3 step 3; a Held without them binds nothing):
    # ``decided_through() -> int | None``: the first height whose decision is not held here (None: no
    # committee);
    # ``delegation_decision(task, version) -> (committee, height, index, nomination) | None``: the
    # first gmp_delegation value decided for (task, version).


@dataclass(frozen=True)
class Outcome:
    kind: str  # "admitted" | "pending" | "refused"
    code: str | None = None
    reason: str = ""
    missing: tuple[str, ...] = ()

    def raise_if_refused(self) -> "Outcome":
        if self.kind == "refused":
            raise GmpRefused(self.code or "gmp_not_authorized", self.reason)
        return self


ADMITTED = Outcome("admitted")
EXEC_FIELDS = frozenset({"status", "progress", "next_check_at", "metrics", "notes", "reason"})
DELEGATOR_FREE = frozenset({"assigned_to", "reason", "next_check_at"})
TAKEOVER_FREE = frozenset({"status", "reason", "assigned_to", "next_check_at"})
GOAL_NEXT = {"proposed": {"active", "cancelled"}, "active": {"paused", "completed", "cancelled", "failed"},
             "paused": {"active", "cancelled", "failed"}}
FIRST_GOAL_STATUSES = frozenset({"proposed", "active"})
MAX_WALK = 100_000  # versions of one lineage walked at most


class _Pending(Exception):
    def __init__(self, missing):
        super().__init__("pending")
        self.missing = tuple(sorted(set(missing)))


def _refuse(code: str, reason: str):
    raise GmpRefused(code, reason)


def _need(held: Held, dids) -> list[Container]:
    """The held containers named by ``dids``, or _Pending with every missing one."""
    found, missing = [], []
    for d in dids:
        c = held.get(d)
        (missing.append(d) if c is None else found.append(c))
    if missing:
        raise _Pending(missing)
    return found


def _is(c: Container | None, cls: str) -> bool:
    return c is not None and c.cls == cls and c.head.get("class_version") == VERSION


def _links(c: Container, name: str) -> list[str]:
    return list(c.related.get(name, []))


def _assigned(c: Container) -> set[str]:
    return set(c.payload.get("assigned_to", ()))


def _short(did: str) -> str:
    return did if len(did) <= 40 else did[:24] + "…" + did[-8:]


def admit(c: Container, held: Held) -> Outcome:
    """Judge ``c`` (a verified GMP 1.1 container) against what ``held`` holds (gmp.md section 4).

    Non-GMP containers have nothing to judge here and are admitted."""
    if not is_gmp(c):
        return ADMITTED
    if type(c.payload) is not dict:
        return Outcome("refused", "gmp_unreadable", f"a {c.cls} payload of type {c.head['payload_type']} "
                                                    "cannot be judged; GMP containers are readable by their audience")
    try:
        if c.cls == "workflow_entry":
            _admit_entry(c, held)
        elif _links(c, "previous_version"):
            _admit_version(c, held)
        else:
            _admit_first(c, held)
    except _Pending as p:
        return Outcome("pending", reason=f"waiting for {len(p.missing)} named container(s)", missing=p.missing)
    except GmpRefused as r:
        return Outcome("refused", r.code, r.reason)
    return ADMITTED


# --- lineage facts every rule reads ------------------------------------------------------------------


def lineage_of(c: Container, held: Held) -> tuple[str, Container]:
    """(lineage id, first version) of an admitted goal or task version."""
    root = held.root(c.did) or c.did
    first = held.get(root) or c
    return root, first


def ancestry(versions, held: Held) -> dict[str, Container]:
    """The given admitted versions and every version they descend from, by DID."""
    seen: dict[str, Container] = {}
    todo = list(versions)
    while todo and len(seen) < MAX_WALK:
        v = todo.pop()
        if v.did in seen:
            continue
        seen[v.did] = v
        todo.extend(p for p in (held.get(d) for d in _links(v, "previous_version")) if p is not None)
    return seen


def is_takeover(v: Container, creator: str, held: Held, known: dict[str, Container] | None = None) -> bool:
    """An admitted task version made by a steward (section 8): not the creator, not an assignee of
    every parent (so admission let it through as a takeover), reason reassigned_overdue.
    ``known``: versions already at hand by DID (saves lookups)."""
    if v.sender_did == creator or v.payload.get("reason") != "reassigned_overdue":
        return False
    known = known or {}
    parents = [known.get(d) or held.get(d) for d in _links(v, "previous_version")]
    return bool(parents) and not all(p is not None and v.sender_did in _assigned(p) for p in parents)


def delegators(versions, creator: str, held: Held, walked: dict[str, Container] | None = None) -> set[str]:
    """Who may offer a task whose current versions are ``versions``: the creator and every steward
    whose takeover is among their ancestors (themselves included). ``walked``: their ancestry, if known."""
    seen = walked if walked is not None else ancestry(versions, held)
    return {creator} | {v.sender_did for v in seen.values() if is_takeover(v, creator, held, seen)}


# --- first versions ---------------------------------------------------------------------------------


def _check_shape(c: Container) -> None:
    irt = _links(c, "in_reply_to")
    if c.cls == "task" and not 1 <= len(irt) <= 2:
        _refuse("gmp_bad_related", f"a task names its goal (and parent task) in related.in_reply_to: "
                                   f"1 or 2 items, not {len(irt)}")
    if c.cls == "goal" and len(irt) > 1:
        _refuse("gmp_bad_related", f"a goal names at most one parent goal in related.in_reply_to, not {len(irt)}")
    prev = _links(c, "previous_version")
    if len(set(prev)) != len(prev):
        _refuse("gmp_bad_related", "related.previous_version names a version twice")


def _lineage_id(held: Held, did: str, cls: str, what: str) -> Container:
    """The first version ``did`` of a held goal/task lineage (pending when not held)."""
    c = _need(held, [did])[0]
    if not _is(c, cls) or held.root(did) != did:
        _refuse("gmp_cross_lineage", f"{what} {_short(did)} is not the first version of a {cls} {VERSION} lineage")
    return c


def _admit_first(c: Container, held: Held) -> None:
    _check_shape(c)
    p, signer = c.payload, c.sender_did
    if c.cls == "goal":
        if p.get("creator", signer) != signer:
            _refuse("gmp_bad_creator", f"payload.creator {_short(p['creator'])} did not sign the first version")
        if p["status"] not in FIRST_GOAL_STATUSES:
            _refuse("gmp_bad_transition", f"a goal starts proposed or active, not {p['status']}")
        return  # a parent goal is not read: a subgoal's audience need not hold it
    irt = _links(c, "in_reply_to")
    goal = _lineage_id(held, irt[0], "goal", "goal")
    parent = _lineage_id(held, irt[1], "task", "parent task") if len(irt) == 2 else None
    if parent is not None and _links(parent, "in_reply_to")[:1] != irt[:1]:
        _refuse("gmp_cross_lineage", "the parent task belongs to another goal")
    extra = _assigned(c) - {signer}
    if extra:
        _refuse("gmp_no_acceptance", f"a first version can assign only its signer, not {_short(sorted(extra)[0])}")
    if p["status"] != "pending" and not (p["status"] == "in_progress" and _assigned(c)):
        _refuse("gmp_bad_transition", f"a task starts pending (or in_progress held by its creator), not {p['status']}")
    if signer != goal.sender_did and not _cited_member(c, held, goal.did, parent.did if parent else None):
        _refuse("gmp_not_authorized", "the first version of a task is signed by the goal's creator, a participant "
                                      "of a goal version it cites, or an assignee of a parent-task version it cites")


def _cited_member(c: Container, held: Held, goal: str, parent_task: str | None) -> bool:
    """Does ``c`` cite in related.see_also a goal version listing its signer as participant (or signed
    by it, the goal's creator), or a ``parent_task`` version listing it as assignee? Pending while
    nothing held justifies it and some cited container is missing."""
    signer, missing = c.sender_did, []
    for d in _links(c, "see_also"):
        v = held.get(d)
        if v is None:
            missing.append(d)
        elif _is(v, "goal") and held.root(d) == goal and (
                signer in v.payload.get("participants", ()) or signer == v.sender_did):
            return True
        elif parent_task and _is(v, "task") and held.root(d) == parent_task and signer in _assigned(v):
            return True
    if missing:
        raise _Pending(missing)
    return False


# --- later versions ---------------------------------------------------------------------------------


def _admit_version(c: Container, held: Held) -> None:
    _check_shape(c)
    parents = _need(held, _links(c, "previous_version"))
    for p in parents:
        if not _is(p, c.cls):
            _refuse("gmp_cross_lineage", f"parent {_short(p.did)} is a {p.cls} {p.head.get('class_version')}, "
                                         f"not a {c.cls} {VERSION}")
    roots = {held.root(p.did) for p in parents}
    if len(roots) != 1 or None in roots:
        _refuse("gmp_cross_lineage", "the parents belong to different lineages")
    root = roots.pop()
    first = _need(held, [root])[0]
    if _links(c, "in_reply_to") != _links(first, "in_reply_to"):
        _refuse("gmp_link_changed", "related.in_reply_to differs from the first version's")
    if c.cls == "goal":
        _goal_version(c, parents, first.sender_did)
    else:
        _task_version(c, parents, root, first, held)


def _joined(c: Container, parents, allowed) -> None:
    """Rule 2 with the join clause: allowed from one parent, or (at a join) a parent's status."""
    to = c.payload["status"]
    if any(allowed(p.payload["status"], to) for p in parents):
        return
    if len(parents) > 1 and any(p.payload["status"] == to for p in parents):
        return
    froms = ", ".join(sorted({p.payload["status"] for p in parents}))
    _refuse("gmp_bad_transition", f"{froms} -> {to} is not allowed for this signer")


def _goal_version(c: Container, parents, creator: str) -> None:
    if c.payload.get("creator", creator) != creator:
        _refuse("gmp_bad_creator", f"payload.creator is not the lineage creator {_short(creator)}")
    if c.sender_did != creator:
        _refuse("gmp_not_authorized", "only the goal's creator versions a goal")
    _joined(c, parents, lambda a, b: a == b or b in GOAL_NEXT.get(a, ()))


def _task_moves(c: Container, roles: set[str]):
    """The transitions of section 3.2 open to a signer with ``roles``."""
    keeps_self = c.sender_did in _assigned(c)

    def allowed(a: str, b: str) -> bool:
        if a == b:
            return a not in TASK_TERMINAL
        if "assignee" in roles and ((a, b) in {("pending", "in_progress"), ("pending", "paused"),
                                               ("in_progress", "paused"), ("paused", "in_progress"),
                                               ("in_progress", "completed"), ("in_progress", "failed")}
                                    or (a in ("in_progress", "paused") and b == "pending" and not keeps_self)):
            return True
        if "creator" in roles:
            return ((a in ("pending", "in_progress") and b == "paused") or (a in ("in_progress", "paused")
                    and b == "pending") or (a not in TASK_TERMINAL and b == "abandoned")
                    or (a in ("completed", "failed") and b == "pending"))
        return False

    return allowed


def _locked_view(c: Container, free) -> tuple:
    """What a signer without the creator's rights may not change: payload fields outside ``free``,
    related.depends_on and head.tags."""
    p = {k: v for k, v in c.payload.items() if k not in free}
    return p, sorted(_links(c, "depends_on")), sorted(c.head.get("tags", ()))


def _task_version(c: Container, parents, root: str, first: Container, held: Held) -> None:
    creator, signer = first.sender_did, c.sender_did
    roles = {"creator"} if signer == creator else set()
    if all(signer in _assigned(p) for p in parents):
        roles.add("assignee")
    if not roles and c.payload.get("reason") == "reassigned_overdue":
        return _takeover(c, parents, first, held)
    signed = getattr(held, "signed_in", None)  # none signed in the lineage: no steward, no walk (view.counts)
    if not roles and (signed is None or signed(root, signer)) and signer in delegators(parents, creator, held):
        roles.add("delegator")
    if not roles:
        _refuse("gmp_not_authorized", f"{_short(signer)} is neither the task's creator, an assignee of every "
                                      "parent, nor a steward")
    _joined(c, parents, _task_moves(c, roles))
    if "creator" not in roles:
        _check_locked(c, parents, roles)
    added = _assigned(c) - set().union(*(_assigned(p) for p in parents)) - ({signer} & {creator})
    for d in sorted(added):
        _check_assignment(c, d, parents, root, creator, held)


def _check_locked(c: Container, parents, roles: set[str]) -> None:
    """Rule 3: an assignee changes only the execution fields and may drop itself; a steward that took
    the task over (a delegator) changes only assigned_to, by adding accepted agents."""
    signer, mine = c.sender_did, _assigned(c)
    for p in parents:
        theirs = _assigned(p)
        if "assignee" in roles and _locked_view(c, EXEC_FIELDS | {"assigned_to"}) == \
                _locked_view(p, EXEC_FIELDS | {"assigned_to"}) and mine in (theirs, theirs - {signer}):
            return
        if "delegator" in roles and _locked_view(c, DELEGATOR_FREE) == _locked_view(p, DELEGATOR_FREE) \
                and mine >= theirs:
            return
    what = "an assignee may change only status, progress, next_check_at, metrics, notes, reason and drop itself" \
        if "assignee" in roles else "a steward may only add accepted assignees (and set next_check_at, reason)"
    _refuse("gmp_field_locked", what)


def _takeover(c: Container, parents, first: Container, held: Held) -> None:
    """A steward's takeover (section 8): a participant cited from a goal version, every parent held,
    overdue at the takeover's signed time, assignees removed, nothing else changed."""
    signer = c.sender_did
    if any(signer in _assigned(p) for p in parents):
        _refuse("gmp_not_authorized", "an assignee of some parents cannot take the task over from the others")
    if not _cited_member(c, held, _links(first, "in_reply_to")[0], None):
        _refuse("gmp_not_authorized", "a steward cites in related.see_also a goal version listing it as participant")
    for p in parents:
        overdue = task_state(p).overdue_at_ms
        if overdue is None:
            _refuse("gmp_not_authorized", f"parent {_short(p.did)} has no holder to take the task from")
        if c.timestamp_ms < overdue:
            _refuse("gmp_takeover_early", f"signed {overdue - c.timestamp_ms} ms before parent "
                                          f"{_short(p.did)} is overdue")
    if c.payload["status"] != "pending":
        _refuse("gmp_bad_transition", "a takeover sets the task pending")
    if _assigned(c):
        _refuse("gmp_field_locked", "a takeover removes the overdue assignees and adds nobody")
    if not any(_locked_view(c, TAKEOVER_FREE) == _locked_view(p, TAKEOVER_FREE) for p in parents):
        _refuse("gmp_field_locked", "a takeover changes only status, reason, assigned_to and next_check_at")


# --- assignments (rule 4) ---------------------------------------------------------------------------


def _check_assignment(c: Container, d: str, parents, root: str, creator: str, held: Held) -> None:
    """An acceptance by ``d`` in related.agreed, of a valid offer; under a contested rule, a basis."""
    agreed = [a for a in _need(held, _links(c, "agreed"))
              if _is(a, "workflow_entry") and a.payload["entry_type"] == "acceptance" and a.sender_did == d]
    if not agreed:
        _refuse("gmp_no_acceptance", f"no acceptance by {_short(d)} in related.agreed")
    offers = _need(held, [a.payload["offer"] for a in agreed])
    walked: dict = {}  # the lineage's versions and delegators, walked once and only when needed

    def walk(what: str):
        if not walked:
            walked["versions"] = ancestry(parents, held)
            walked["delegators"] = delegators(parents, creator, held, walked["versions"])
        return walked[what]

    faults, good = [], []
    for a, o in zip(agreed, offers):
        fault = offer_fault(o, root, d)
        if fault is None and o.sender_did != creator and o.sender_did not in walk("delegators"):
            fault = "the offer is not signed by a delegator"
        if fault is None and o.payload["task_version"] not in {p.did for p in parents} and \
                o.payload["task_version"] not in walk("versions"):
            fault = "the offer names a task version that is not a parent or an ancestor of one"
        if fault is None and a.timestamp_ms > parse_ms(o.payload["expires_at"]):
            fault = "accepted after the offer's expires_at"
        (faults.append(fault) if fault else good.append(o))
    if not good:
        _refuse("gmp_no_acceptance", f"{_short(d)}: {faults[0]}")
    rule = c.payload.get("delegation_rule", "creator")
    if rule in ("cogconsensus", "meshconsensus"):
        fault_of = basis_fault if rule == "cogconsensus" else decision_fault
        faults = [fault_of(o, root, d, held) for o in good]
        if all(faults):
            _refuse("gmp_against_decision", f"{_short(d)}: {faults[0]}")


def offer_fault(o: Container, root: str, d: str) -> str | None:
    """Why ``o`` is not an offer of lineage ``root`` to ``d`` (None when it is)."""
    if not _is(o, "workflow_entry") or o.payload["entry_type"] != "delegation":
        return "the acceptance names something that is not a delegation"
    if o.payload.get("nomination") is True:
        return "the acceptance names a nomination, not an offer"
    if _links(o, "in_reply_to") != [root]:
        return "the offer is about another lineage"
    if d not in o.payload["candidates"]:
        return "the acceptor is not among the offer's candidates"
    return None


def basis_fault(o: Container, root: str, d: str, held: Held) -> str | None:
    """Why the offer ``o`` does not rest on an approved CogConsensus result nominating ``d``
    (None when it does). Pending while the result, its votes or the nomination are not held."""
    basis = o.payload.get("basis")
    if type(basis) is not str:
        return "the offer cites no consensus_result in basis"
    result = _need(held, [basis])[0]
    try:
        claim = read_claim(result)
    except ConsensusError as exc:
        return f"basis: {exc.reason}"
    votes = {v.did: v for v in _need(held, claim.vote_dids)}
    verdict = verify_result(result, votes)
    if not verdict.ok:
        return f"basis is not a consistent result: {verdict.code}"
    if claim.state != "approved":
        return f"the result's state is {claim.state}, not approved"
    n = _need(held, [claim.target])[0]
    if not (_is(n, "workflow_entry") and n.payload["entry_type"] == "delegation" and n.payload.get("nomination")
            is True and _links(n, "in_reply_to") == [root] and n.payload["candidates"] == [d]):
        return "the result is not about a nomination of the acceptor for this task"
    return None


def commit_marker(height: int) -> str:
    """What a container waiting for MeshConsensus height ``height`` lists as missing (not a DID:
    nothing to fetch; the node judges it again once it has caught up, ``store_admission``)."""
    return f"commit:{height}"


def decision_fault(o: Container, root: str, d: str, held: Held) -> str | None:
    """Why the offer ``o`` does not rest on the binding MeshConsensus decision for its task version
    naming ``d`` (None when it does): ``basis`` is {committee, height}, the first gmp_delegation
    value decided for (task, offered version) is at that height of that committee, and its
    nomination (held: pending until then) names exactly ``d`` for this task and version. Pending
    until this node has decided ``height`` (caught up)."""
    basis = o.payload.get("basis")
    through, first = getattr(held, "decided_through", None), getattr(held, "delegation_decision", None)
    if type(basis) is not dict:
        return "the offer cites no MeshConsensus decision ({committee, height}) in basis"
    held_through = through() if through is not None else None
    if held_through is None or first is None:
        return "no MeshConsensus decisions are held here"
    if basis["height"] >= held_through:
        raise _Pending([commit_marker(basis["height"])])
    version = o.payload["task_version"]
    found = first(root, version)
    if found is None or (found[0], found[1]) != (basis["committee"], basis["height"]):
        return "basis is not the first MeshConsensus decision for this task version"
    n = _need(held, [found[3]])[0]
    if not (_is(n, "workflow_entry") and n.payload["entry_type"] == "delegation" and n.payload.get("nomination")
            is True and _links(n, "in_reply_to") == [root] and n.payload.get("task_version") == version
            and n.payload["candidates"] == [d]):
        return "the binding decision is not about a nomination of the acceptor for this task version"
    return None


# --- workflow entries (section 4.3: admitted from anyone, counted in the view) ----------------------

# the fields naming a container the counting rules read: the entry is pending until they are held
NAMED_FIELDS = ("task_version", "offer", "received")


def _admit_entry(c: Container, held: Held) -> None:
    kind, irt = c.payload["entry_type"], _links(c, "in_reply_to")
    if len(irt) != 1:
        _refuse("gmp_bad_related", f"an entry names one task or goal in related.in_reply_to, not {len(irt)}")
    if kind == "rollback" and not _links(c, "contradicts"):
        _refuse("gmp_bad_related", "a rollback names what it undoes in related.contradicts")
    about = held.get(irt[0])
    names = [c.payload[f] for f in NAMED_FIELDS if type(c.payload.get(f)) is str] + _links(c, "contradicts")
    if kind == "delegation" and c.payload.get("nomination") is True:
        names += _links(c, "see_also")
    _need(held, ([irt[0]] if about is None else []) + names)
    if not (_is(about, "goal") or _is(about, "task")) or held.root(irt[0]) != irt[0]:
        _refuse("gmp_cross_lineage", "related.in_reply_to names no goal or task lineage")
    if about.cls == "goal" and kind not in GOAL_ENTRY_KINDS and not kind.startswith("x-"):
        _refuse("gmp_cross_lineage", f"a {kind} entry is about a task, not a goal")
