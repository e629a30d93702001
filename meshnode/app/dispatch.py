"""The one table of actions and the one way in: ``dispatch(app, actor, name, args)``.

Every face calls an action through here with the actor it vouches for; ``args`` are the
caller's (JSON values, checked against the action's parameters), and can never name who asks
or who approved: those are the face's to say.
"""

from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from meshnode.app.actions import (a2a, chat, children, consensus, containers, edits, ethics, gate, gmp, inbox, knowledge,
                                  llm, meshconsensus, mind, names, node_log, node_status, notes, peers, reactor,
                                  reputation)
from meshnode.app.actor import Actor
from meshnode.app.context import App
from meshnode.base.errors import MeshnodeError
from meshnode.store.service import person_first

RESERVED = ("app", "actor", "approved_by")  # set by the face, never by the caller's arguments


@dataclass(frozen=True)
class Action:
    name: str
    fn: Callable[..., Awaitable[Any]]
    summary: str
    signs: bool = True  # it signs with the node's key (a read does not: the CLI then needs no passphrase)


ACTIONS: dict[str, Action] = {a.name: a for a in (
    Action("note_add", notes.note_add, "write a signed note (a public one is gossiped at once)"),
    Action("notes", notes.notes, "a page of notes, newest first, each with who asked for it", signs=False),
    Action("note_read", notes.note_read, "a note in full, marked read", signs=False),
    Action("note_tag", notes.note_tag, "add and remove a note's local tags", signs=False),
    Action("chat_send", chat.chat_send, "a message to the agent, in a new conversation or one more in a thread"),
    Action("diary_add", knowledge.diary_add, "write a diary entry (CogSync)"),
    Action("concept_add", knowledge.concept_add, "define a concept (CogSync)"),
    Action("link_add", knowledge.link_add, "link a concept to others (CogSync)"),
    Action("edit", edits.edit, "update or withdraw knowledge or a note (a new version, or a retraction)"),
    Action("diary", knowledge.diary, "the newest diary entries", signs=False),
    Action("concepts", knowledge.concepts, "the newest concepts", signs=False),
    Action("links", knowledge.links, "the newest links", signs=False),
    Action("reputation", reputation.reputation, "every agent's trust now, most trusted first", signs=False),
    Action("reputation_show", reputation.reputation_show, "everything behind one agent's trust", signs=False),
    Action("reputation_set", reputation.reputation_set, "the person's judgement of an agent (0..1)", signs=False),
    # goals and tasks (GMP), CogConsensus votes and results
    Action("goal_add", gmp.goal_add, "create a goal signed by this node"),
    Action("goal_update", gmp.goal_update, "a new version of a goal (its creator only)"),
    Action("goal_cancel", gmp.goal_cancel, "cancel a goal; its open tasks here are abandoned"),
    Action("goal_list", gmp.goal_list, "goals: status, title, open/total tasks", signs=False),
    Action("goal_show", gmp.goal_show, "a goal as a tree of its tasks", signs=False),
    Action("task_add", gmp.task_add, "add a task to a goal"),
    Action("task_update", gmp.task_update, "a new version of a task (creator; assignee: status, check, notes)"),
    Action("task_assign", gmp.task_assign, "offer a task to agents (direct, by interest, or by a consensus result)"),
    Action("task_nominate", gmp.task_nominate, "propose a peer for a contested task"),
    Action("task_accept", gmp.task_accept, "accept an offer of a task"),
    Action("task_refuse", gmp.task_refuse, "refuse an offer of a task"),
    Action("task_progress", gmp.task_progress, "report progress on a task held"),
    Action("task_done", gmp.task_done, "complete a task held (or fail it)"),
    Action("task_release", gmp.task_release, "give back a task held"),
    Action("task_review", gmp.task_review, "review a finished task's result: accept, or reject (reopen, reassign)"),
    Action("task_list", gmp.task_list, "tasks: status, progress, assignees, title", signs=False),
    Action("task_show", gmp.task_show, "a task: shown version, forks, holders, entries", signs=False),
    Action("task_due", gmp.task_due, "what needs a check now: overdue, holder dead, unassigned, offers open",
           signs=False),
    Action("consensus_vote", consensus.consensus_vote, "this node's CogConsensus vote on a target"),
    Action("consensus_tally", consensus.consensus_tally, "the tally of the votes held on a target", signs=False),
    Action("consensus_result", consensus.consensus_result, "sign a CogConsensus result from the tally now"),
    # the agent's mind, the gate's review, ethics and the LLMs: the person steers the agent (decisions person-only)
    Action("mind", mind.mind, "the agent's state, validators and held commands", signs=False),
    Action("mind_held", mind.mind_held, "commands the validators held, newest first", signs=False),
    Action("mind_release", mind.mind_release, "let held commands run (now, when the cycle runs)", signs=False),
    Action("mind_drop", mind.mind_drop, "discard held commands", signs=False),
    Action("mind_pause", mind.mind_pause, "stop the agent until resumed (kept across restarts)", signs=False),
    Action("mind_resume", mind.mind_resume, "let a paused agent think again", signs=False),
    Action("tick", mind.tick, "wake the cognitive cycle now", signs=False),
    Action("mind_ticks", mind.mind_ticks, "the last ticks, newest first", signs=False),
    Action("mind_tick_show", mind.mind_tick_show, "one tick in full", signs=False),
    Action("chat_threads", chat.chat_threads, "the conversations with the agent, newest first", signs=False),
    Action("chat_thread", chat.chat_thread, "one conversation with the agent, oldest first", signs=False),
    Action("drafts", gate.drafts_listing, "the agent's open drafts (records what was shown)", signs=False),
    Action("drafts_decide", gate.drafts_decide, "accept or reject the agent's drafts", signs=False),
    Action("drafts_edit", gate.drafts_edit, "the person's own content for a draft", signs=False),
    Action("drafts_commit", gate.drafts_commit, "write the accepted drafts after a snapshot", signs=False),
    Action("snapshots", gate.snapshots_listing, "the snapshots taken before commits", signs=False),
    Action("snapshot_show", gate.snapshot_show, "one snapshot: its files and state", signs=False),
    Action("snapshot_rollback", gate.snapshot_rollback, "restore the files as a snapshot has them", signs=False),
    Action("confirmations", gate.confirmations, "the agent's requests for a confirmation", signs=False),
    Action("confirm_decide", gate.confirm_decide, "approve or reject a confirmation request", signs=False),
    Action("gate_reset_limit", gate.gate_reset_limit, "a fresh budget of tool calls for the agent", signs=False),
    Action("ethics", ethics.ethics, "the ethics policies", signs=False),
    Action("ethics_add", ethics.ethics_add, "add (or replace) an ethics policy", signs=False),
    Action("ethics_remove", ethics.ethics_remove, "remove an ethics policy", signs=False),
    Action("llms", llm.llms, "the registered LLMs", signs=False),
    Action("llm_add", llm.llm_add, "register an LLM", signs=False),
    Action("llm_update", llm.llm_update, "change a registered LLM's settings", signs=False),
    Action("llm_select", llm.llm_select, "make an LLM the main one", signs=False),
    Action("llm_remove", llm.llm_remove, "remove a registered LLM", signs=False),
    # the running node's mesh and housekeeping; none signs with the key
    Action("status", node_status.status, "the node: identity, counts, running or not, addresses, peers, agent,"
           " what waits (with no node running: as its home last knew)", signs=False),
    Action("metrics", node_status.metrics, "the node's counters (with full: histograms and gauges)", signs=False),
    Action("peers", peers.peers, "the peers this node knows, connected or not", signs=False),
    Action("ping", peers.ping, "a peer's round trip", signs=False),
    Action("find", peers.find, "an agent by DID, or the agents of an interest, on the mesh", signs=False),
    Action("formation", peers.formation, "connected peers and GossipSub mesh sizes", signs=False),
    Action("friend", peers.friend, "make a peer a friend, or no longer one", signs=False),
    Action("friends", peers.friends, "this node's friends", signs=False),
    Action("sync", peers.sync, "reconcile with one peer now", signs=False),
    Action("send", containers.send, "push a container to a peer", signs=False),
    Action("fetch", containers.fetch, "fetch a container from a peer and store it", signs=False),
    Action("received", containers.received, "when containers arrived here", signs=False),
    Action("export", containers.export, "a container's bytes", signs=False),
    Action("consensus_propose", meshconsensus.consensus_propose, "propose a value to the committee", signs=False),
    Action("consensus_next_committee", meshconsensus.consensus_next_committee, "propose the next committee",
           signs=False),
    Action("consensus_status", meshconsensus.consensus_status, "the committee's state", signs=False),
    Action("consensus_decisions", meshconsensus.consensus_decisions, "the decisions stored here", signs=False),
    Action("reputation_round", reputation.reputation_round, "fold observations and publish trust now",
           signs=False),
    Action("children", children.children, "this node's children", signs=False),
    Action("child_show", children.child_show, "one child in full", signs=False),
    Action("child_remove", children.child_remove, "no longer a child nor a friend", signs=False),
    Action("spawn", children.spawn, "make a child node (a job: pending while it runs)", signs=False),
    Action("spawn_wait", children.spawn_wait, "the result of a pending spawn", signs=False),
    Action("reactor_status", reactor.reactor_status, "the running reactor's state", signs=False),
    Action("reactor_scan", reactor.reactor_scan, "one reactor scan now, in the node", signs=False),
    # what the reactor stored (read with or without a node) and a lease dropped by hand
    Action("reactor_stored", reactor.reactor_stored, "the reactor's state as its rows say", signs=False),
    Action("reactor_events", reactor.reactor_events, "events newest first, with their last decision", signs=False),
    Action("reactor_jobs", reactor.reactor_jobs, "wake jobs newest first", signs=False),
    Action("reactor_job", reactor.reactor_job, "one job: context, report, events, decisions, lease", signs=False),
    Action("reactor_explain", reactor.reactor_explain, "every decision on an event or a job, in order",
           signs=False),
    Action("reactor_unknown", reactor.reactor_unknown, "addressees nobody is known as, with counts", signs=False),
    Action("reactor_release", reactor.reactor_release, "drop a job's lease by hand", signs=False),
    # reading the notebook and knowledge without marking anything, and the references a person typed
    Action("note_show", notes.note_show, "a note in full, not marked read", signs=False),
    Action("search", knowledge.search, "notes, diary entries and concepts containing some words", signs=False),
    Action("references", knowledge.references, "container references as typed, resolved and checked",
           signs=False),
    # what the gate lets the agent do
    Action("gate_tools", gate.gate_tools, "the gate's tools and risk levels; which sends ask first", signs=False),
    # the reactor's cooldowns: listed, and lifted by the person (issue 33)
    Action("reactor_cooldowns", reactor.reactor_cooldowns, "the reactor's cooldowns in force", signs=False),
    Action("reactor_cooldown_clear", reactor.reactor_cooldown_clear, "lift a reactor cooldown, or all of them",
           signs=False),
    # the A2A face's held queue and blocks: the person's controls
    Action("a2a_held", a2a.a2a_held, "the unknown parties' messages held for the person", signs=False),
    Action("a2a_reject", a2a.a2a_reject, "reject held messages: all, a party's or an address's", signs=False),
    Action("a2a_block", a2a.a2a_block, "block a party or an address at the A2A face", signs=False),
    Action("a2a_unblock", a2a.a2a_unblock, "lift a block at the A2A face", signs=False),
    Action("a2a_blocks", a2a.a2a_blocks, "the blocks at the A2A face", signs=False),
    # the person's inbox: what waits for them, decided through the actions above (issue 34)
    Action("inbox", inbox.inbox, "what waits for the person, newest first", signs=False),
    Action("inbox_count", inbox.inbox_count, "how many items wait for the person", signs=False),
    Action("inbox_decide", inbox.inbox_decide, "decide one item through the action that decides it", signs=False),
    Action("chat_thread_rename", chat.chat_thread_rename, "give a conversation its own title", signs=False),
    Action("chat_thread_archive", chat.chat_thread_archive, "archive a conversation (or bring it back): out of"
           " the list and the agent's prompt", signs=False),
    Action("chat_thread_delete", chat.chat_thread_delete, "delete a conversation: its messages hidden, out of the"
           " agent's prompt", signs=False),
    # pages made for reading (issue 34): the reactor's wakes told in words
    Action("reactor_timeline", reactor.reactor_timeline, "the reactor's wakes in words, newest first", signs=False),
    # names (issue 35): what the person calls agents, shown wherever a DID was
    Action("names", names.names, "every agent known here with what it is called (petname, announced name)",
           signs=False),
    Action("name_set", names.name_set, "give an agent a petname, on this node only", signs=False),
    Action("name_unset", names.name_unset, "forget an agent's petname", signs=False),
    # running it for real (issue 35): the node's lifecycle
    Action("log_level", node_log.log_level, "the running node's log level, changed for this run (or read)",
           signs=False),
    # the settings the running node started with (issue 35: `meshnode config show` tells what waits for a restart)
    Action("config_in_effect", node_status.config_in_effect, "the settings the running node started with",
           signs=False),
    Action("child_start", children.child_start, "start a local child, as a process the running node waits on",
           signs=False),
    Action("child_stop", children.child_stop, "stop a local child", signs=False),
)}


def check_args(name: str, args: dict) -> Action:
    """The action ``name`` if ``args`` fit its parameters, else a MeshnodeError saying why."""
    action = ACTIONS.get(name)
    if action is None:
        raise MeshnodeError("unknown_command", f"no action {name[:40]!r}")
    reserved = sorted(set(args) & set(RESERVED))
    if reserved:
        raise MeshnodeError("bad_request", f"{name}: {', '.join(reserved)} cannot be given (the face that"
                                           " received the request says who asks)")
    try:
        inspect.signature(action.fn).bind(None, None, **args)
    except TypeError as exc:
        raise MeshnodeError("bad_request", f"{name}: {exc}") from None
    return action


async def dispatch(app: App, actor: Actor, name: str, args: dict, *, approved_by: Actor | None = None) -> Any:
    """Run action ``name`` for ``actor``; ``approved_by``: the person whose confirmation carries
    it out (the gate's approvals)."""
    action = check_args(name, args)
    if app.metrics is not None:
        app.metrics.inc("actions", action=name, actor=actor.kind)
    extra = {"approved_by": approved_by} if approved_by is not None else {}
    with person_first() if actor.kind == "person" else contextlib.nullcontext():  # the person's reads
        return await action.fn(app, actor, **args, **extra)  # never wait behind the mesh's
