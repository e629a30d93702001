"""The command line loads only what a command uses (issue 31): building the parser, ``--version``,
``--help`` and ``status`` load none of the heavy stacks; every command's function is found when it
runs; the parsers' copies of choices and defaults agree with their homes. Timings live in
bench/cli.py: these tests check which modules are loaded, not how long it takes."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys

import pytest

from meshnode.cli import build_parser
from meshnode.cli_parsers import vocabulary
from meshnode.cli_parsers.commands import Command

HEAVY = ("trio", "mcp", "a2a", "starlette", "hypercorn", "libp2p", "httpx", "nacl", "multiaddr", "pydantic",
         "jsonschema", "sqlite3")
# what `status` may load beyond the parser: the config, the key and the control client
STATUS_HEAVY = ("trio", "mcp", "a2a", "starlette", "hypercorn", "libp2p", "httpx", "pydantic", "jsonschema")


def loaded_after(code: str) -> set[str]:
    """The top-level packages in sys.modules after running ``code`` in a fresh interpreter."""
    probe = code + "\nimport json, sys\nprint(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return set(json.loads(result.stdout.splitlines()[-1]))


PARSE = "from meshnode.cli import build_parser\ntry:\n    build_parser().parse_args({argv!r})\nexcept SystemExit:\n    pass"


@pytest.mark.parametrize("code", [
    "import meshnode.cli",
    PARSE.format(argv=["--version"]),
    PARSE.format(argv=["--help"]),
    PARSE.format(argv=["status"]),
    PARSE.format(argv=["goal", "list", "--help"]),
], ids=["import", "version", "help", "parse-status", "subcommand-help"])
def test_the_parser_loads_no_heavy_stack(code):
    assert loaded_after(code) & set(HEAVY) == set()


def test_the_status_command_loads_neither_trio_nor_the_web_mcp_a2a_stacks():
    assert loaded_after("import meshnode.cli_node, meshnode.cli_common, meshnode.control") & set(STATUS_HEAVY) == set()


def test_cognition_commands_do_not_load_the_mcp_sdk():
    assert loaded_after("import meshnode.cognition.commands") & {"mcp", "mcp_types", "jsonschema"} == set()


def _commands(parser: argparse.ArgumentParser):
    func = parser._defaults.get("func")
    if func is not None:
        yield parser.prog, func
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _commands(sub)


def test_every_command_names_a_function_that_exists():
    found = list(_commands(build_parser()))
    assert len(found) > 100  # the walk found the tree
    for prog, func in found:
        assert isinstance(func, Command), prog
        assert callable(func.resolve()), f"{prog}: {func!r}"


def test_a_command_named_wrong_fails_when_resolved():
    with pytest.raises(AttributeError):
        Command("meshnode.cli_node", "cmd_no_such_command").resolve()


@pytest.mark.parametrize("name", sorted(vocabulary.HOMES))
def test_the_parsers_choices_agree_with_their_homes(name):
    module, expression = vocabulary.HOMES[name]
    assert getattr(vocabulary, name) == eval(expression, vars(importlib.import_module(module)))
