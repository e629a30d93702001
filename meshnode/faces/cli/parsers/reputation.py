"""The parsers of the commands in ``meshnode.faces.cli.reputation`` (imported only when one runs)."""

from __future__ import annotations

import argparse

from meshnode.faces.cli.parsers.commands import Commands

commands = Commands("meshnode.faces.cli.reputation")


_AGENT = "the agent: its DID (did:key:...), its name, or its short id (key:...)"


def add_parsers(sub, common) -> None:
    rep = sub.add_parser("reputation", parents=[common], help="trust in other agents (HMP RTE)")
    rep = rep.add_subparsers(dest="reputation_command", required=True, metavar="SUBCOMMAND")
    p = rep.add_parser("list", parents=[common], help="agents this node trusts or distrusts, most trusted first")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_list)
    p = rep.add_parser("show", parents=[common], help="one agent's trust: evidence, history, others' statements")
    p.add_argument("did", metavar="AGENT", help=_AGENT)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_show)
    p = rep.add_parser("set", parents=[common], help="set an agent's trust to your own judgement",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Set an agent's trust score now (0 = none, 0.5 = unknown, 1 = full), e.g.\n"
                                   "  meshnode reputation set did:key:z6Mk... 0.8 --reason \"I know its operator\"\n"
                                   "It then decays toward 0.5 and moves with evidence like any score.")
    p.add_argument("did", metavar="AGENT", help=_AGENT)
    p.add_argument("score", type=float, help="the trust score, 0 to 1")
    p.add_argument("--reason", default="", help="why (kept with the score, shown by `reputation show`)")
    p.set_defaults(func=commands.cmd_set)
