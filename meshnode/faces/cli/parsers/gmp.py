"""The parsers of the commands in ``meshnode.faces.cli.gmp`` (imported only when one runs)."""

from __future__ import annotations

from meshnode.faces.cli.parsers.commands import Commands
from meshnode.faces.cli.parsers.vocabulary import DELEGATION_RULES, GOAL_STATUSES, TASK_STATUSES

commands = Commands("meshnode.faces.cli.gmp")


_GOAL = "the goal: its lineage DID, a version's DID, or the short id `goal list` shows"


_TASK = "the task: its lineage DID, a version's DID, or the short id `task list` shows"


def _json_flag(p) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")


def add_parsers(sub, common) -> None:
    goal = sub.add_parser("goal", parents=[common], help="goals shared with their participants (GMP)")
    goal = goal.add_subparsers(dest="goal_command", required=True, metavar="SUBCOMMAND")
    p = goal.add_parser("add", parents=[common], help="create a goal (signed by this node); prints its lineage id",
                        epilog="example: meshnode goal add 'Ship the bridge' --priority 0.8 --participant bob")
    p.add_argument("title", help="the goal's title")
    p.add_argument("--description", help="what it is about")
    p.add_argument("--priority", type=float, help="0 to 1 (default 0.5)")
    p.add_argument("--criterion", action="append", default=[], help="a success criterion (repeatable)")
    p.add_argument("--constraint", action="append", default=[], help="a constraint (repeatable)")
    p.add_argument("--participant", action="append", default=[], metavar="PEER",
                   help="an agent who works on or watches it: DID, name or short id (repeatable)")
    p.add_argument("--public", action="store_true", help="offer it to any peer that wants public goals")
    p.add_argument("--tag", action="append", default=[], help="a tag (repeatable)")
    p.add_argument("--parent", metavar="GOAL", help="the goal this one is a subgoal of")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_goal_add)
    p = goal.add_parser("list", parents=[common], help="goals: status, title, open/total tasks")
    p.add_argument("--status", choices=GOAL_STATUSES, help="only goals in this status")
    p.add_argument("--mine", action="store_true", help="only goals this node creates, takes part in or works on")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_goal_list)
    p = goal.add_parser("show", parents=[common], help="a goal as a tree of its tasks, with status, assignees, due")
    p.add_argument("goal", metavar="GOAL", help=_GOAL)
    p.add_argument("-v", "--verbose", action="store_true", help="DIDs instead of names")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_goal_show)
    p = goal.add_parser("update", parents=[common], help="a new version of a goal (its creator only)",
                        epilog="example: meshnode goal update Zj0MbGG0y9 --status paused --add-participant carol")
    p.add_argument("goal", metavar="GOAL", help=_GOAL)
    p.add_argument("--status", choices=GOAL_STATUSES)
    p.add_argument("--title")
    p.add_argument("--description")
    p.add_argument("--priority", type=float, help="0 to 1")
    p.add_argument("--add-participant", action="append", default=[], metavar="PEER", help="repeatable")
    p.add_argument("--remove-participant", action="append", default=[], metavar="PEER", help="repeatable")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_goal_update)
    p = goal.add_parser("cancel", parents=[common], help="cancel a goal; its open tasks of this node are abandoned")
    p.add_argument("goal", metavar="GOAL", help=_GOAL)
    p.add_argument("--reason", help="why (published as a reflection on the goal)")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_goal_cancel)
    _task_parsers(sub, common)


def _task_parsers(sub, common) -> None:
    task = sub.add_parser("task", parents=[common], help="tasks of goals: add, delegate, accept, work, complete (GMP)")
    task = task.add_subparsers(dest="task_command", required=True, metavar="SUBCOMMAND")
    p = task.add_parser("add", parents=[common], help="add a task to a goal; prints its lineage id",
                        epilog="example: meshnode task add Zj0MbGG0y9 'build adapter' --deadline 3d --check-every 1d")
    p.add_argument("goal", metavar="GOAL", help=_GOAL)
    p.add_argument("title", help="the task's title")
    p.add_argument("--description")
    p.add_argument("--parent", metavar="TASK", help="the task this one is a subtask of")
    p.add_argument("--depends", action="append", default=[], metavar="TASK", help="a task it waits for (repeatable)")
    p.add_argument("--deadline", metavar="T", help="when it is due: 2026-12-02, '2026-12-02 10:00' (UTC) or 3d")
    p.add_argument("--check-every", metavar="D", help="how often its holder shows life on it (default 1d)")
    p.add_argument("--grace", metavar="D", help="how late a check may be before it is reassigned (default 1h)")
    p.add_argument("--rule", choices=DELEGATION_RULES, default="creator", help="who chooses its holder")
    p.add_argument("--tag", action="append", default=[], help="a tag, also what --interest looks for (repeatable)")
    p.add_argument("--priority", type=float, help="0 to 1")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_task_add)
    p = task.add_parser("list", parents=[common], help="tasks: status, progress, assignees, due, title")
    p.add_argument("--goal", metavar="GOAL", help="only this goal's tasks")
    p.add_argument("--mine", action="store_true", help="only tasks this node created or holds")
    p.add_argument("--status", choices=TASK_STATUSES)
    _json_flag(p)
    p.set_defaults(func=commands.cmd_task_list)
    p = task.add_parser("show", parents=[common], help="a task: shown version, forks, holders, entries")
    p.add_argument("task", metavar="TASK", help=_TASK)
    _json_flag(p)
    p.set_defaults(func=commands.cmd_task_show)
    p = task.add_parser("update", parents=[common], help="a new version of a task (creator, or assignee: status,"
                        " next check, notes, progress)", epilog="example: meshnode task update Zj0MbGG0y9 --status"
                                                                " in_progress --next-check 1d")
    p.add_argument("task", metavar="TASK", help=_TASK)
    p.add_argument("--status", choices=TASK_STATUSES)
    p.add_argument("--next-check", metavar="T", help="when you will look at it next (a time, or 1d from now)")
    p.add_argument("--notes")
    p.add_argument("--title")
    p.add_argument("--description")
    p.add_argument("--progress", type=float, help="0 to 1")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_task_update)
    p = task.add_parser("assign", parents=[common], help="offer a task to agents (they accept or refuse)",
                        epilog="examples: meshnode task assign Zj0MbGG0y9 --to bob\n"
                               "          meshnode task assign Zj0MbGG0y9 --interest rust --candidates 3"
                               "   (needs a running node)")
    p.add_argument("task", metavar="TASK", help=_TASK)
    p.add_argument("--to", action="append", default=[], metavar="PEER", help="a candidate (repeatable)")
    p.add_argument("--interest", metavar="TAG", help="find candidates by interest in the mesh")
    p.add_argument("--candidates", type=int, default=1, metavar="N", help="with --interest: offer to the top N")
    p.add_argument("--basis", metavar="RESULT", help="a contested task: the approved CogConsensus result on a"
                   " nomination, whose candidate is offered the task")
    p.add_argument("--expires", metavar="D", help="how long the offer stands (default: [gmp] offer_seconds, 1h)")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_task_assign)
    p = task.add_parser("nominate", parents=[common], help="propose a peer for a contested task (cogconsensus:"
                        " participants vote on the nomination with consensus vote, and after [gmp] vote_seconds the"
                        " creator's node offers the task to the best approved one; meshconsensus: the committee"
                        " binds a nomination and the creator's node offers it)")
    p.add_argument("task", metavar="TASK", help=_TASK)
    p.add_argument("peer", metavar="PEER", help="the candidate")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_task_nominate)
    for name, helptext in (("accept", "accept an offer of a task"), ("refuse", "refuse an offer of a task")):
        p = task.add_parser(name, parents=[common], help=helptext)
        p.add_argument("task", metavar="TASK", help=_TASK)
        p.add_argument("--offer", metavar="DID", help="which offer (default: the newest open one naming you)")
        if name == "refuse":
            p.add_argument("--reason")
        _json_flag(p)
        p.set_defaults(func=commands.cmd_task_answer, answer=name)
    p = task.add_parser("progress", parents=[common], help="report progress on a task you hold (0 to 1)")
    p.add_argument("task", metavar="TASK", help=_TASK)
    p.add_argument("progress", type=float, help="0 to 1")
    p.add_argument("--summary")
    p.add_argument("--check-in", action="store_true", help="also publish a version moving the next check on")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_task_progress)
    p = task.add_parser("done", parents=[common], help="complete a task you hold (or --failed)")
    p.add_argument("task", metavar="TASK", help=_TASK)
    p.add_argument("--summary")
    p.add_argument("--failed", action="store_true")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_task_done)
    p = task.add_parser("release", parents=[common], help="give back a task you hold (it becomes unassigned)")
    p.add_argument("task", metavar="TASK", help=_TASK)
    _json_flag(p)
    p.set_defaults(func=commands.cmd_task_release)
    p = task.add_parser("review", parents=[common], help="review the result of a task you created: accept it, or"
                                                         " reject it with a reason (reopens it)")
    p.add_argument("task", metavar="TASK", help=_TASK)
    p.add_argument("verdict", choices=("accept", "reject"),
                   help="accept: the result stands; reject: the task goes back to pending with your reason")
    p.add_argument("--reason", help="why (required to reject: its holder reads it)")
    p.add_argument("--reassign", action="store_true", help="with reject: take it from its holders, to offer again")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_task_review)
    p = task.add_parser("due", parents=[common], help="what needs a check now: overdue, holder dead, unassigned,"
                                                      " offers open")
    p.add_argument("--all", action="store_true", help="every open task, with its state")
    _json_flag(p)
    p.set_defaults(func=commands.cmd_task_due)
