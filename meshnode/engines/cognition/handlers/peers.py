"""The handlers of the commands about other agents: votes, trust, the agents the node knows.

``reputation_set`` does not set a score: reputation is evidence-based, and a model's opinion is not
evidence (protocols/reputation.md). It asks the person, with a private note that names the command
to run (``meshnode reputation set``), and the person decides.
"""

from __future__ import annotations

import json

from meshnode.engines.cognition.handlers.rows import json_of, rows_of, sql_time, tags_json
from meshnode.base.errors import IdentityError, MeshnodeError
from meshnode.base.identity.did import did_to_peer_id
from meshnode.app.actions import consensus
from meshnode.app.actions.notes import write_note
from meshnode.app.actor import AGENT, node
from meshnode.records.reputation.reading import reputation_detail, reputation_rows
from meshnode.store.sharing import FRIEND


def _consensus_vote(db, key, now, args):
    vote = consensus.cast(db, key, AGENT, args["target"], args["value"], now_ms=now,
                          decision=args.get("decision", "general"))
    return {"did": vote.did}


def _reputation_list(db, key, now, args):
    return reputation_rows(db, now_ms=now)[: args.get("limit", 50)]


def _reputation_show(db, key, now, args):
    return reputation_detail(db, args["did"], now_ms=now)


REQUEST_TAG = "reputation-request"


def _reputation_set(db, key, now, args):
    if args["did"] == key.did:
        raise MeshnodeError("bad_args", "that is this agent's own DID")
    reason = " ".join(args["reason"].split())
    line = f"meshnode reputation set {args['did']} {args['score']:g} --reason {json.dumps(reason, ensure_ascii=False)}"
    note = write_note(db, key, node("cognition"),
                      f"The agent asks you to set its trust in {args['did']} to {args['score']:g}: {reason}\n"
                      f"To do so, run:\n  {line}\n(Trust changes only by evidence or by you.)",
                      now_ms=now, topic="trust request", tags=[REQUEST_TAG])  # read: for the person, not the agent's mail
    return {"asked": "the person", "note": note.did, "applied": False}


def _agents(db, key, now, args):
    return rows_of(db.conn.execute("SELECT id, name, tags, status, last_seen FROM agent_peers ORDER BY last_seen DESC"
                                 " LIMIT ?", (args.get("limit", 50),)), decode=())


def _agent_add(db, key, now, args):
    """Friendship is the user's decision (it opens notes and knowledge to the peer): no Friend tag here."""
    if args["did"] == key.did:
        raise MeshnodeError("bad_args", "that is this agent's own DID")
    if any(t.strip().lower() == FRIEND.lower() for t in args.get("tags", [])):
        raise MeshnodeError("refused", f"the {FRIEND} tag shares private notes and knowledge; only the user sets it")
    try:
        peer_id = did_to_peer_id(args["did"])
    except IdentityError:
        raise MeshnodeError("bad_value", "the mesh reaches agents by did:key DIDs (Ed25519); this one is not") from None
    with db.transaction() as conn:
        if conn.execute("SELECT 1 FROM agent_peers WHERE id = ?", (args["did"],)).fetchone() is not None:
            raise MeshnodeError("duplicate", f"agent {args['did']} is known already; agents_list shows it")
        conn.execute("INSERT INTO agent_peers (id, peer_id, name, tags, registered_at) VALUES (?, ?, ?, ?, ?)",
                     (args["did"], peer_id, args.get("name"), tags_json(args), sql_time(now)))
    return {"did": args["did"], "peer_id": peer_id}


def _agent_delete(db, key, now, args):
    """Refused for a friend, an untrusted or blacklisted peer, or one with reputation or standing
    records: forgetting it would erase the user's choice or the evidence about it."""
    peer = args["did"]
    with db.transaction() as conn:
        row = conn.execute("SELECT status, tags FROM agent_peers WHERE id = ?", (peer,)).fetchone()
        if row is None:
            raise MeshnodeError("not_found", f"no agent {peer}")
        status, tags = row[0], json_of(row[1])
        if isinstance(tags, list) and FRIEND in tags:
            raise MeshnodeError("refused", f"agent {peer} is a friend (the user's choice); the node keeps it")
        if status in ("untrusted", "blacklisted"):
            raise MeshnodeError("refused", f"agent {peer} is {status}; forgetting it would lift that")
        if conn.execute("SELECT 1 FROM agent_reputation WHERE agent_id = ? UNION ALL SELECT 1 FROM reputation_evidence"
                        " WHERE did = ? UNION ALL SELECT 1 FROM peer_standing WHERE did = ? AND (invalid > 0"
                        " OR rate_limited > 0 OR banned_until_ms > 0) LIMIT 1", (peer,) * 3).fetchone():
            raise MeshnodeError("refused", f"the node holds reputation or standing records about {peer}; it keeps them")
        conn.execute("DELETE FROM agent_peers WHERE id = ?", (peer,))
    return {"deleted": peer}


HANDLERS = {
    "consensus_vote": _consensus_vote,
    "reputation_list": _reputation_list,
    "reputation_show": _reputation_show,
    "reputation_set": _reputation_set,
    "agents_list": _agents,
    "agent_add": _agent_add,
    "agent_delete": _agent_delete,
}
