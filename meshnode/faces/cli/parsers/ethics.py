"""The parsers of the commands in ``meshnode.faces.cli.ethics`` (imported only when one runs)."""

from __future__ import annotations

import argparse

from meshnode.faces.cli.parsers.commands import Commands

commands = Commands("meshnode.faces.cli.ethics")


def add_parsers(sub, common) -> None:
    p = sub.add_parser("ethics", parents=[common], help="ethics policies: the norms the agent thinks under",
                       description="Ethics policies (seed 000, context 1): shown to the agent at every tick.")
    eth = p.add_subparsers(dest="ethics_command", required=True, metavar="SUBCOMMAND")
    p = eth.add_parser("add", parents=[common], help="add a policy (or --replace one of yours)",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Add an ethics policy: a name and one or more principles, e.g.\n"
                                   "  meshnode ethics add privacy \"never share the person's notes without asking\"")
    p.add_argument("name", help="the policy's name: 1 to 64 letters, digits or ._-")
    p.add_argument("principles", nargs="+", metavar="PRINCIPLE", help="a principle, one sentence each")
    p.add_argument("--model-type", help="the kind of ethical model, e.g. deontological, consequentialist")
    p.add_argument("--on-violation", metavar="TEXT", help="what the agent does when a principle is broken")
    p.add_argument("--replace", action="store_true", help="change the policy of that name instead of refusing")
    p.set_defaults(func=commands.cmd_add)
    p = eth.add_parser("list", parents=[common], help="the policies, the person's first")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_list)
    p = eth.add_parser("remove", parents=[common], help="remove a policy")
    p.add_argument("name", help="the policy's name (see `meshnode ethics list`)")
    p.set_defaults(func=commands.cmd_remove)
