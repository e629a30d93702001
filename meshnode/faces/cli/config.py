"""``meshnode config show|get|set``: the settings the node starts with, where each comes from, and a
change to one of them in config.toml.

    meshnode config show [SECTION] [--changed]   every setting: value, and default / config.toml / $VAR / flags
                                                 (and the running node's value where it differs: a restart applies it)
    meshnode config get net.listen                one value (a text as it is, anything else as TOML)
    meshnode config set net.listen /ip4/0.0.0.0/tcp/4101

``set`` is meshnode.base.config.edit: the file keeps its comments, and the change is checked by the
loader as start-up checks it (one line naming the setting, the value and the rule when refused, the
file unchanged). The node reads its settings when it starts: ``set`` says whether a node runs now and
so needs a restart. Works with the node stopped; a home ``meshnode init`` did not make is an error.
"""

from __future__ import annotations

import json
import sys

from meshnode.base.config import CONFIG_FILE, DEFAULTS, resolve_home
from meshnode.base.config.command_line import config_of
from meshnode.base.config.edit import RUNTIME, set_value, setting
from meshnode.base.config.text import toml_value
from meshnode.base.errors import ConfigError, MeshnodeError
from meshnode.faces.cli.common import _ask_node, _config, print_json, terminal_safe
from meshnode.net.control import ControlError


def _origin(config, section: str, key: str) -> str:
    """Where a value comes from, as a person reads it: default, config.toml, $MESHNODE_..., flags.
    config.toml as ``meshnode init`` writes it holds every default: a value there that is the default is
    ``default``."""
    origin = config.origin(section, key)
    if origin != str(config.home / CONFIG_FILE):
        return origin
    return "default" if config.get(section, key) == DEFAULTS[section][key] else CONFIG_FILE


def cmd_show(args) -> int:
    config = _config(args)
    if args.section is not None and args.section not in DEFAULTS:
        raise ConfigError("unknown_setting", f"no section [{args.section[:40]}]; the sections: {', '.join(DEFAULTS)}")
    running = _in_effect(config)
    rows = [(section, key, value, _origin(config, section, key))
            for section in ([args.section] if args.section else DEFAULTS)
            for key, value in config.values[section].items()]
    if args.changed:
        rows = [r for r in rows if r[3] != "default" or _differs(running, r[0], r[1], r[2])]
    if args.json:
        shown: dict = {}
        for section, key, value, origin in rows:
            shown.setdefault(section, {})[key] = {"value": value, "from": origin}
            if _differs(running, section, key, value):
                shown[section][key]["running"] = running[section][key]
        print_json(shown)
        return 0
    width = min(max((len(f"{s}.{k} = {toml_value(v)}") for s, k, v, _ in rows), default=0), 72)
    for section, key, value, origin in rows:
        line = f"{section}.{key} = {toml_value(value)}"
        later = (f"; the running node has {toml_value(running[section][key])} until it restarts"
                 if _differs(running, section, key, value) else "")
        print(terminal_safe(f"{line:{width}}  ({origin}{later})"))
    return 0


def _in_effect(config) -> dict | None:
    """The settings the running node started with; None when no node runs (or it does not answer)."""
    try:
        return _ask_node(config, "config_in_effect", required=False, timeout=5.0)
    except ControlError:
        return None


def _differs(running: dict | None, section: str, key: str, value) -> bool:
    return running is not None and key in running.get(section, {}) and running[section][key] != value


def cmd_get(args) -> int:
    config = _config(args)
    section, key = setting(args.name)
    value = config.get(section, key)
    running = _in_effect(config)
    if _differs(running, section, key, value):  # the file changed since the node started
        print(terminal_safe(f"meshnode: the running node has {toml_value(running[section][key])} until it restarts"),
              file=sys.stderr)
    if args.json:
        print(json.dumps(value, ensure_ascii=False))
    else:
        print(terminal_safe(value if isinstance(value, str) else toml_value(value)))
    return 0


def cmd_set(args) -> int:
    home = resolve_home(getattr(args, "home", None))
    if not (home / CONFIG_FILE).is_file():
        _config(args)  # no home, or no key: the error that says to run `meshnode init`
    change = set_value(home, args.name, args.value)
    name = f"{change.section}.{change.key}"
    print(terminal_safe(f"{name} = {toml_value(change.new)} in {change.file} (was {toml_value(change.old)})"))
    if change.overridden_by:
        print(f"note: ${change.overridden_by} is set here and overrides config.toml for a node started with it")
    print(terminal_safe(_when_it_applies(args, name, RUNTIME.get((change.section, change.key)))))
    return 0


def _when_it_applies(args, name: str, runtime: str | None) -> str:
    """The node reads config.toml when it starts: does one run now (then it needs a restart)?"""
    now = f"; `{runtime}` changes it in the running node now" if runtime else ""
    try:
        live = _ask_node(config_of(args), "status", required=False, timeout=5.0)
    except (ControlError, MeshnodeError) as exc:  # a node that does not answer, a config the environment spoils
        print(f"meshnode: could not tell whether a node runs: {exc.reason}", file=sys.stderr)
        live = None
    if live is None:
        return f"the node is not running: {name} applies when it starts"
    return (f"the running node (pid {live.get('pid', '?')}) keeps the old value until it restarts"
            f" (`meshnode stop`, then `meshnode start`; or restart `meshnode run`){now}")
