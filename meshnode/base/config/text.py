"""Writing config.toml: every section, with its note as a comment (``meshnode init`` writes the defaults;
a spawned child's config is its parent's effective values)."""

from __future__ import annotations

from typing import Any, Mapping

from meshnode.base.config.schema import DEFAULTS, TABLES, section_note


def default_config_text(name: str) -> str:
    """config.toml with every setting at its default (and ``name``), one commented section each."""
    return config_text({**DEFAULTS, "node": {**DEFAULTS["node"], "name": name}})


def config_text(values: Mapping[str, Mapping[str, Any]]) -> str:
    """config.toml holding ``values`` (every section of DEFAULTS), one commented section each
    (a spawned child's config is the parent's effective values written this way)."""
    lines = [
        "# meshnode configuration. Environment variables MESHNODE_<SECTION>_<KEY> override it,",
        "# command-line flags override both. Relative paths are relative to this folder.",
        "# A list in a variable: items separated by commas, or a TOML array:",
        "#   MESHNODE_NET_LISTEN=/ip4/0.0.0.0/tcp/7822,/ip6/::/tcp/7822",
    ]
    for section in DEFAULTS:
        keys = values[section]
        lines += ["", f"# {section_note(section)}", f"[{section}]"]
        tables = [k for k in keys if k in TABLES.get(section, ()) or isinstance(keys[k], dict)]
        for key, value in keys.items():
            if key not in tables:
                lines.append(f"{key} = {toml_value(value)}")
        for key in tables:  # tables the person fills in (an inline {} could not be extended)
            lines.append(f"[{section}.{key}]")
            lines += [f"{_toml_str(k)} = {toml_value(v)}" for k, v in keys[key].items()]
    return "\n".join(lines) + "\n"


def toml_value(v: Any) -> str:
    """``v`` as TOML writes it (a table inline)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return _toml_str(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):  # an inline table
        return "{" + ", ".join(f"{_toml_str(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
