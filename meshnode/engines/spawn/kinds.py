"""What each kind of child gets, per local table and per container class, as data.

Seed 000: a ``clone`` gets every table, ``trained`` the cognitive diaries, the semantic graph and
the known agents, ``newborn`` the table structure only. Issue 17 narrows clone to what the parent
may share with a child: never its key, the person's private notes, pending confirmations or
drafts, account secrets. ``seed.py`` does what these rules say; the README table "What each kind
of child gets" is the same data with the reasons (a test compares the two), and a test fails when
a migration adds a table or a class is registered without a decision here.

A rule is one of:

* ``copy``: the signed containers are copied, re-verified and stored by the child's own insert
  path (their table views are rebuilt by the child);
* ``shared``: copied like ``copy``, but only the containers the parent's own sharing rule
  (``store.sharing``) would give a friend, which the child is: a ``friends`` note reaches no one
  its author did not allow, and knowledge keeps its author's hop limit (``payload.forward``);
* ``rebuilt``: a table the child derives itself from the containers it stored; nothing is copied;
* ``row``: local rows (no signature exists) copied by explicit columns, filtered (``seed.py``);
* ``parent``: only the row for the parent, which ``family.tie_parent`` writes (not the seeding);
* ``never``: not copied; the child starts with an empty table of its own.
"""

from __future__ import annotations

from typing import NamedTuple

from meshnode.base.container.schema import class_schema
from meshnode.engines.spawn.model import KINDS

RULES = ("copy", "shared", "rebuilt", "row", "parent", "never")
UNKNOWN_CLASS = "(unknown class)"
AGENT_TABLES = "agent_t_*"  # the agent's own tables (cognition/handlers/tables.py), made at run time


class Rule(NamedTuple):
    clone: str
    trained: str
    newborn: str
    why: str


_r = Rule  # short: the tables below hold one a line


_NEVER_RUNTIME = "the parent's runtime history; the child makes its own"

TABLES: dict[str, Rule] = {
    # containers and what the insert path derives from them
    "containers": _r("copy", "copy", "never", "per class, below; re-verified by the child"),
    "container_links": _r("rebuilt", "rebuilt", "never", "written by the child's insert path from `related`"),
    "container_recipients": _r("rebuilt", "rebuilt", "never", "from `head.recipient` by the insert path"),
    "container_forward": _r("rebuilt", "rebuilt", "never", "from `payload.forward` by the insert path"),
    "container_versions": _r("rebuilt", "rebuilt", "never", "the lineage index, from the copied versions"),
    "container_tags": _r("rebuilt", "rebuilt", "never", "from the payloads by the insert path"),
    "author_usage": _r("rebuilt", "rebuilt", "never",
                       "kept by triggers as containers arrive; the child's own DID has no row (authorship at 0)"),
    "store_usage": _r("rebuilt", "rebuilt", "never", "kept by triggers as containers arrive"),
    "notes": _r("rebuilt", "never", "never", "view of the copied note containers (public, shareable friends);"
                                             " copied notes start read: history, not mail to the child"),
    "provenance": _r("never", "never", "never",
                     "who asked the parent to write its containers is the parent's own record; in the child"
                     " they are the parent's, a peer's"),
    "a2a_blocks": _r("never", "never", "never",
                     "the parent's person blocked these parties and addresses at the parent's A2A face; a child's"
                     " face starts open"),
    "attachments": _r("row", "never", "never", "only those of a copied note, tied to the child's row of it"),
    "diary_entries": _r("rebuilt", "rebuilt", "never", "view of the copied diary_entry containers"),
    "concepts": _r("rebuilt", "rebuilt", "never", "view of the copied semantic_node containers"),
    "links": _r("rebuilt", "rebuilt", "never", "view of the copied semantic_edges containers"),
    "diary_graph_index": _r("row", "row", "never",
                            "the diary's own map: rows whose two entries the child holds, ids remapped"),
    "goals": _r("rebuilt", "never", "never", "view of the copied goal containers (local rows: none exist)"),
    "goal_links": _r("rebuilt", "never", "never", "view of the copied goal containers"),
    "tasks": _r("rebuilt", "never", "never",
                "view of the copied task containers; the parent's local work queue (rows without a"
                " container: fact checks, auxiliary loops) is not the child's"),
    "task_holders": _r("rebuilt", "never", "never", "derived by GMP from the copied tasks; the child holds none"),
    "task_reviews": _r("never", "never", "never",
                       "the parent's reviews of results of tasks it created; the child created none of them"),
    "gmp_entries": _r("rebuilt", "never", "never", "derived by GMP admission"),
    "gmp_audience": _r("rebuilt", "never", "never",
                       "derived from the goals; the child is not added to any audience"),
    "gmp_assignees": _r("rebuilt", "never", "never", "derived from the tasks"),
    "gmp_goal_clock": _r("rebuilt", "never", "never", "derived from the goals' containers"),
    "gmp_members": _r("rebuilt", "never", "never", "derived by GMP admission"),
    "gmp_pending": _r("never", "never", "never",
                      "the parent's containers awaiting admission; copies go in the parent's order, so the"
                      " child's own admission holds and releases its own"),
    "gmp_pending_missing": _r("never", "never", "never", "as gmp_pending"),
    # peers and reputation
    "agent_peers": _r("row", "row", "parent",
                      "known agents, without the Friend tag: the parent's friends are not the child's unless"
                      " `spawn --friends` says so (spawn.friends); online state is observed fresh; the parent's"
                      " own row, a friend, is family.tie_parent's, for every kind"),
    "agent_reputation": _r("row", "row", "never", "known agents' reputation (history in order)"),
    "peer_standing": _r("row", "row", "never", "valid/invalid counts and bans of known agents"),
    "reputation_evidence": _r("row", "row", "never", "the evidence behind the reputation"),
    "reputation_watermarks": _r("never", "never", "never", "the parent's publishing state: authorship at 0"),
    "reputation_published": _r("never", "never", "never", "the parent's own publications: authorship at 0"),
    "peer_liveness": _r("never", "never", "never", "observed fresh by the child"),
    # the agent's settings and knowledge without a container form
    "identity": _r("never", "never", "never", "the child's own, from its own key (`init_home`)"),
    "config": _r("row", "never", "never",
                 "the agent's settings only (`cycle.*` but the checkpoint, `cognition.emotions`, `agent.*`),"
                 " never a key that names a secret, nor runtime state (checkpoint, reactor scan, gate budget,"
                 " pins of the parent's rows)"),
    "llm_registry": _r("row", "never", "never",
                       "the LLM registry: endpoints with the name of their key's environment variable; only"
                       " the fields the registry reads are copied (no key is stored there)"),
    "system_prompts": _r("row", "never", "never", "settings"),
    "ethics_policies": _r("row", "never", "never", "settings"),
    "thinking_methods": _r("row", "never", "never", "settings (ids kept: ratings name them)"),
    "stagnation_strategies": _r("row", "never", "never", "settings (ids kept: ratings name them)"),
    "ratings": _r("row", "never", "never", "ratings of the methods and strategies copied with them"),
    "agent_tables": _r("row", "never", "never", "agent tables: the register, and the tables themselves below"),
    AGENT_TABLES: _r("row", "never", "never", "re-created from their columns (checked names), rows copied"),
    "agent_scripts": _r("row", "never", "never", "the agent's scripts"),
    "external_services": _r("row", "never", "never", "endpoints only: any user:password@ or query in the URL"
                                                     " is cut"),
    "external_accounts": _r("never", "never", "never", "credentials (passwords, tokens)"),
    "llm_memory": _r("row", "never", "never", "knowledge with no container form"),
    "abstracts": _r("row", "never", "never", "knowledge with no container form"),
    "unverified_facts": _r("row", "never", "never",
                           "claims to check; the ids of the parent's responses and tasks they point at are"
                           " cleared (not copied)"),
    "ethics_cases": _r("row", "never", "never", "precedents; `thought_id` remapped to the child's diary row"),
    # the parent's runtime
    "llm_recent_responses": _r("never", "never", "never", _NEVER_RUNTIME + " (dialogue, may quote private notes)"),
    "anti_stagnation_metrics": _r("never", "never", "never", _NEVER_RUNTIME),
    "tick_traces": _r("never", "never", "never", _NEVER_RUNTIME + " (prompts may quote private notes)"),
    "chat_prompted": _r("never", "never", "never", _NEVER_RUNTIME + " (which messages its prompts showed)"),
    "chat_threads": _r("never", "never", "never", "the person's conversations with the parent stay the parent's"),
    "petnames": _r("never", "never", "never", "the person's names for agents stay on the node they were set on"),
    "process_log": _r("never", "never", "never", _NEVER_RUNTIME),
    "main_process": _r("never", "never", "never", _NEVER_RUNTIME),
    "processes": _r("never", "never", "never", _NEVER_RUNTIME),
    "users": _r("never", "never", "never", "the person's logins and password hashes; they log into the child"
                                           " separately"),
    "users_group": _r("never", "never", "never", "as users"),
    "password_reset_tokens": _r("never", "never", "never", "secrets"),
    "gate_snapshots": _r("never", "never", "never", "the parent's gate: snapshots of its files"),
    "gate_snapshot_files": _r("never", "never", "never", "as gate_snapshots"),
    "gate_drafts": _r("never", "never", "never", "drafts never"),
    "gate_confirmations": _r("never", "never", "never", "pending confirmations never"),
    "gate_submissions": _r("never", "never", "never", "the parent's submissions to its person"),
    "held_commands": _r("never", "never", "never", "commands held for the person's decision"),
    "emergency_decisions": _r("never", "never", "never", "the person's decisions on held commands"),
    "consensus_decisions": _r("never", "never", "never",
                              "MeshConsensus state of the committee the parent is in (nothing rebuilds it from"
                              " containers); the outcomes travel as the copied consensus_result containers"),
    "consensus_epochs": _r("never", "never", "never", "as consensus_decisions"),
    "consensus_emergency": _r("never", "never", "never", "as consensus_decisions"),
    "reactor_events": _r("never", "never", "never", "the child's reactor starts clean"),
    "reactor_decisions": _r("never", "never", "never", "the child's reactor starts clean"),
    "reactor_jobs": _r("never", "never", "never", "the child's reactor starts clean"),
    "reactor_person_lines": _r("never", "never", "never", "the parent's person's notices stay with that person"),
    "reactor_cooldowns": _r("never", "never", "never", "the child's reactor starts clean"),
    "reactor_leases": _r("never", "never", "never", "the child's reactor starts clean"),
    "reactor_failures": _r("never", "never", "never", "the child's reactor starts clean"),
    "reactor_escalations": _r("never", "never", "never", "the child's reactor starts clean"),
    "children": _r("never", "never", "never", "the parent's children are not the child's"),
    "spawn_invitations": _r("never", "never", "never", "the parent's invitations"),
    "spawn_origin": _r("never", "never", "never", "the child's own row, written by family.tie_parent"),
    "sqlite_sequence": _r("rebuilt", "rebuilt", "never",
                          "SQLite's own counters, kept by SQLite as the child's rows arrive"),
}

CLASSES: dict[str, Rule] = {
    "note (public)": _r("copy", "never", "never", "what the parent gives anyone"),
    "note (friends)": _r("shared", "never", "never",
                         "only where the author let it travel past its recipients (`forward`) to a friend of"
                         " the parent; a new DID is not among the signed recipients"),
    "note (private)": _r("never", "never", "never", "the person's private notes and chats never leave the parent"),
    "peer_announce": _r("copy", "copy", "never", "so the child knows where peers are"),
    "heartbeat": _r("never", "never", "never", "ephemeral; the child sends its own"),
    "diary_entry": _r("shared", "shared", "never", "cognitive diary, within its author's hop limit"),
    "semantic_node": _r("shared", "shared", "never", "concepts, within their author's hop limit"),
    "semantic_edges": _r("shared", "shared", "never", "links, within their author's hop limit"),
    "goal 1.0": _r("copy", "never", "never", "goals"),
    "task 1.0": _r("copy", "never", "never", "tasks"),
    "workflow_entry 1.0": _r("never", "never", "never", "HMP: private, never given out (store.sharing)"),
    "goal 1.1": _r("copy", "never", "never",
                   "goals; re-admitted by the child's GMP, which adds it to no audience: it reads them"),
    "task 1.1": _r("copy", "never", "never", "as goal 1.1; the child holds no task"),
    "workflow_entry 1.1": _r("copy", "never", "never", "the goals' history, as goal 1.1"),
    "vote": _r("copy", "never", "never", "history; the child does not vote in past epochs"),
    "consensus_result": _r("copy", "never", "never", "decisions of the mesh"),
    "trust": _r("copy", "copy", "never", "signed trust statements: the reputation's basis"),
    "equivocation_evidence": _r("copy", "copy", "never", "protects the child from known liars"),
    "spawn_invitation": _r("never", "never", "never", "the parent's invitations are local"),
    "spawn_hello": _r("never", "never", "never", "never stored as a container"),
    UNKNOWN_CLASS: _r("copy", "never", "never",
                      "verified by envelope only, as CogSync does; given to anyone who asks. An unknown version"
                      " of a class named above is never copied (what it holds cannot be judged)"),
}

KIND_RULES: dict[str, dict[str, Rule]] = {"tables": TABLES, "classes": CLASSES}


_NAMED = {key.split(" ")[0] for key in CLASSES} - {UNKNOWN_CLASS.split(" ")[0]}


def class_key(cls: str, version: str | None = None, audience: str | None = None) -> str | None:
    """The row of ``CLASSES`` for a container of ``cls`` at ``version`` (None: any version known
    here); None for a version of a named class this node has no schema for, whose payload cannot
    be judged (a ``note`` 2.0 might hide its audience), and for a note without a known audience."""
    if cls not in _NAMED:
        return UNKNOWN_CLASS
    if version is not None and class_schema(cls, version) is None and f"{cls} {version}" not in CLASSES:
        return None
    if cls == "note":
        return f"note ({audience})" if f"note ({audience})" in CLASSES else None
    if version is not None and f"{cls} {version}" in CLASSES:
        return f"{cls} {version}"
    return cls if cls in CLASSES else None


def rule(kind: str, *, table: str | None = None, cls: str | None = None, version: str | None = None,
         audience: str | None = None) -> str:
    """The rule for ``kind`` of a local table, or of a container class (``version`` and, for notes,
    ``audience`` pick the row). A table no rule names (a future one) is ``never``."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}")
    if (table is None) == (cls is None):
        raise ValueError("give a table or a class")
    if table is not None:
        row = TABLES.get(AGENT_TABLES if table.startswith("agent_t_") else table)
    else:
        key = class_key(cls, version, audience)
        row = CLASSES[key] if key else None
    return getattr(row, kind) if row else "never"
