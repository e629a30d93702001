"""The configuration a command line names: its home (``--home``, else $MESHNODE_HOME), ``--db``,
``--key-file`` and ``--log-level`` over config.toml; and logging to that call's stderr at its level.

Every command that works on a home starts here: the CLI's (``cli/common._config``) and the commands
that are a face or the node themselves (``meshnode mcp``, ``meshnode run``), which the CLI's parser
names without importing them.
"""

from __future__ import annotations

import argparse

from meshnode.base import node_log
from meshnode.base.config.loader import load_config
from meshnode.base.config.model import Config, resolve_home


def config_of(args: argparse.Namespace) -> Config:
    home = resolve_home(getattr(args, "home", None))
    overrides = {"store": {"path": getattr(args, "db", None)}, "keys": {"path": getattr(args, "key_file", None)},
                 "log": {"level": getattr(args, "log_level", None)}}
    config = load_config(home, overrides)
    node_log.log_to_stderr(config.get("log", "level"))
    return config
