"""The parsers of the commands in ``meshnode.faces.cli.gate`` (imported only when one runs)."""

from __future__ import annotations

from meshnode.faces.cli.parsers.commands import Commands

commands = Commands("meshnode.faces.cli.gate")


def add_parsers(sub, common) -> None:
    d = sub.add_parser("drafts", parents=[common], help="review the agent's drafted file changes").add_subparsers(
        dest="drafts_command", required=True, metavar="SUBCOMMAND")
    p = d.add_parser("list", parents=[common], help="open drafts")
    p.add_argument("--diff", action="store_true", help="show each unified diff")
    p.add_argument("--all", action="store_true", help="the drafts you rejected too (discarded at the next commit)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_drafts_list)
    for name in ("accept", "reject"):
        p = d.add_parser(name, parents=[common], help=f"{name} drafts")
        p.add_argument("paths", nargs="*", metavar="PATH",
                       help="a drafted file's path, as `meshnode drafts list` shows it")
        p.add_argument("--all", action="store_true", help="every pending draft" if name == "accept"
                       else "every pending or accepted draft")
        p.set_defaults(func=commands.cmd_drafts_decide, decision=name)
    p = d.add_parser("edit", parents=[common], help="put your own content in a draft")
    p.add_argument("path", help="the draft's path, as `meshnode drafts list` shows it")
    p.add_argument("--from", dest="source", required=True, help="a file with the new content")
    p.set_defaults(func=commands.cmd_drafts_edit)
    p = d.add_parser("commit", parents=[common], help="write the accepted drafts (a snapshot first)")
    p.add_argument("-m", "--message", default="reviewed and accepted", help="why, for the snapshot")
    p.set_defaults(func=commands.cmd_drafts_commit)

    s = sub.add_parser("snapshots", parents=[common], help="snapshots taken before commits; roll back").add_subparsers(
        dest="snapshots_command", required=True, metavar="SUBCOMMAND")
    p = s.add_parser("list", parents=[common], help="snapshots, newest first")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_snapshots_list)
    p = s.add_parser("show", parents=[common], help="one snapshot")
    p.add_argument("id", type=int, help="the snapshot's number, as `meshnode snapshots list` shows it")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_snapshots_show)
    p = s.add_parser("rollback", parents=[common], help="restore the files as the snapshot has them")
    p.add_argument("id", type=int, help="the snapshot's number, as `meshnode snapshots list` shows it")
    p.set_defaults(func=commands.cmd_snapshots_rollback)

    c = sub.add_parser("confirm", parents=[common], help="answer the agent's requests for confirmation"
                       ).add_subparsers(dest="confirm_command", required=True, metavar="SUBCOMMAND")
    p = c.add_parser("list", parents=[common], help="pending requests")
    p.add_argument("--all", action="store_true", help="answered and expired ones too")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_confirm_list)
    for name in ("approve", "reject"):
        p = c.add_parser(name, parents=[common], help=f"{name} a request")
        p.add_argument("id", type=int, help="the request's number, as `meshnode confirm list` shows it")
        p.set_defaults(func=commands.cmd_confirm_decide, approve=name == "approve")

    g = sub.add_parser("gate", parents=[common], help="the action gate's tools").add_subparsers(
        dest="gate_command", required=True, metavar="SUBCOMMAND")
    p = g.add_parser("tools", parents=[common], help="the tools and their risk levels, and which sends out of"
                     " the node ask a person first")
    p.add_argument("--openai", action="store_true", help="as OpenAI tool definitions (JSON)")
    p.set_defaults(func=commands.cmd_tools)
    what = "let the agent go on after it used its budget of tool calls for a piece of work ([gate] max_calls_per_task)"
    p = g.add_parser("reset-limit", parents=[common], help=what, description=what + "; a running node applies it at"
                     " its next tick")
    p.set_defaults(func=commands.cmd_reset_limit)
