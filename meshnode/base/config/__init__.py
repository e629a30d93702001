"""Node configuration: config.toml in the home, then MESHNODE_* variables, then flags.

The home directory is the node's whole world (HMP nodes live in their own
folder): ``config.toml``, ``keys/``, ``bootstrap.txt`` and the database. A
spawned child later gets a sibling home of its own. Relative paths in the
config are relative to the home.

Every setting has a section and a key (``[store] path``); the environment
variable for it is ``MESHNODE_<SECTION>_<KEY>`` in upper case
(``MESHNODE_STORE_PATH``). Values are type-checked against the defaults. A
list-valued setting is given in a variable as items separated by commas
(``MESHNODE_NET_LISTEN=/ip4/0.0.0.0/tcp/7822,/ip6/::/tcp/7822``) or as a TOML
array (``MESHNODE_NET_LISTEN='["/ip4/0.0.0.0/tcp/7822"]'``); empty is an
empty list. Addresses and DIDs are checked when the configuration is loaded,
and an error names the file (or variable) and the setting.

A base layer: this package imports only meshnode.base.errors and meshnode.base.identity, never an engine or a
face. Each section's defaults, note and checks are in its own module (``net``, ``gate``, ``reactor``,
``web``, ``a2a``, ``mcp``, ...), which the engines and faces read their settings from; ``schema`` lists
the sections, ``loader`` reads them, ``text`` writes config.toml, ``model`` is the loaded ``Config``.
"""

from meshnode.base.config.loader import MAX_CONFIG_BYTES, load_config
from meshnode.base.config.model import CONFIG_FILE, HOME_ENV, Config, resolve_home
from meshnode.base.config.net import plain_ip_tcp
from meshnode.base.config.node import check_name
from meshnode.base.config.reactor import check_reactor
from meshnode.base.config.schema import DEFAULTS
from meshnode.base.config.spawn import SPAWN_AUTOSTARTS
from meshnode.base.config.text import config_text, default_config_text

__all__ = ["CONFIG_FILE", "DEFAULTS", "HOME_ENV", "MAX_CONFIG_BYTES", "SPAWN_AUTOSTARTS", "Config", "check_name",
           "check_reactor", "config_text", "default_config_text", "load_config", "plain_ip_tcp", "resolve_home"]
