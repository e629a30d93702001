"""The parsers of the commands in ``meshnode.faces.cli.llm`` (imported only when one runs)."""

from __future__ import annotations

import argparse

from meshnode.faces.cli.parsers.commands import Commands

commands = Commands("meshnode.faces.cli.llm")


def add_parsers(sub, common) -> None:
    llm = sub.add_parser("llm", parents=[common], help="the LLMs of the cognitive core (OpenAI-compatible)")
    llm = llm.add_subparsers(dest="llm_command", required=True, metavar="SUBCOMMAND")
    p = llm.add_parser("add", parents=[common], help="register an OpenAI-compatible chat endpoint",
                       epilog="example: meshnode llm add local --url http://127.0.0.1:11434/v1 --model qwen2.5:7b")
    p.add_argument("name", help="a name for it, used by select and remove")
    p.add_argument("--url", required=True, help="base URL, e.g. http://127.0.0.1:11434/v1 (Ollama)")
    p.add_argument("--model", required=True, help="the model name the endpoint expects")
    p.add_argument("--priority", type=int, default=0, help="higher is tried first")
    p.add_argument("--validator", action="store_true", help="a validator, not a main LLM")
    p.add_argument("--api-key-env", help="the environment variable holding its API key (never stored)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per request")
    p.set_defaults(func=commands.cmd_add)
    p = llm.add_parser("update", parents=[common], help="change some settings of a registered LLM",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description="Change the given settings of a registered LLM and keep the rest, e.g.\n"
                                   "  meshnode llm update local --timeout 300 --priority 5")
    p.add_argument("name", help="the LLM's name (see `meshnode llm list`)")
    p.add_argument("--url", help="a new base URL, e.g. http://127.0.0.1:11434/v1")
    p.add_argument("--model", help="a new model name")
    p.add_argument("--priority", type=int, help="a new priority (higher is tried first)")
    role = p.add_mutually_exclusive_group()
    role.add_argument("--validator", dest="validator", action="store_const", const=True,
                      help="make it a validator")
    role.add_argument("--main", dest="validator", action="store_const", const=False,
                      help="make it a main LLM (not a validator)")
    key = p.add_mutually_exclusive_group()
    key.add_argument("--api-key-env", help="the environment variable holding its API key (never stored)")
    key.add_argument("--no-api-key", action="store_true", help="send no API key")
    p.add_argument("--timeout", type=float, help="seconds per request")
    p.set_defaults(func=commands.cmd_update)
    p = llm.add_parser("list", parents=[common], help="registered LLMs, the main one first")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=commands.cmd_list)
    p = llm.add_parser("select", parents=[common], help="make an LLM the main one")
    p.add_argument("name", help="its name (as `meshnode llm list` shows)")
    p.set_defaults(func=commands.cmd_select)
    p = llm.add_parser("remove", parents=[common], help="forget an LLM")
    p.add_argument("name", help="its name (as `meshnode llm list` shows)")
    p.set_defaults(func=commands.cmd_remove)
