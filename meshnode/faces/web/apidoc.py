"""protocols/api.md, written from the route table (``python -m meshnode.faces.web.apidoc > protocols/api.md``).

The routes' own declarations (``Endpoint``: method, path, args, doc) are the API's documentation;
this renders the same list ``GET /api`` returns, built without a server, so the file cannot drift
from the code (tests/test_web_api_doc.py regenerates it and compares).
"""

from __future__ import annotations

import sys

from meshnode.faces.web.endpoint import Arg, Endpoint

HEADER = """# The HTTP API of the web notebook

Generated from the route table by `python -m meshnode.faces.web.apidoc > protocols/api.md`; do not edit by
hand (tests/test_web_api_doc.py fails when this file and the routes differ). The design, the rules
and the reasons are in protocols/web.md; `GET /api` returns the same table as JSON.

Every JSON response is `{"ok": true, "result": ...}` or `{"ok": false, "code": ..., "reason": ...}`
with the code's HTTP status (400 bad input, 401 no credentials, 403 cross-origin, 404 not found,
409 refused in this state, 413 too large, 500 a bug). GET takes its arguments in the query string
(`a,b` for a list, `true`/`false` for a bool); POST takes a JSON object. An unknown argument, a
missing required one, a wrong type or a value out of range is refused (400 `bad_arguments`) before
anything runs. Lists are paged with `limit` (1 to 500, default 50) and, where a route takes it, a
`before` cursor. Every route needs the session cookie or `Authorization: Bearer <token>` unless it
says "no login".
"""

# What the web does not do in v1 (protocols/web.md 4.1): secrets typed into a page, raw container
# bytes, casting votes, the reactor's external adapters.
CLI_ONLY = (
    ("meshnode init", "creates the home and the key: there is no node to serve a page yet"),
    ("meshnode llm add|update|remove|select", "API keys are not typed into a page"),
    ("meshnode container verify|send", "raw container files"),
    ("meshnode consensus vote|result|verify", "signing votes and results (the tally is GET /api/votes/{did})"),
    ("meshnode reactor (external adapters)", "configured in config.toml"),
)


def _limits(arg: Arg) -> str:
    parts = []
    if arg.choices is not None:
        parts.append("one of " + ", ".join(f"`{c}`" for c in arg.choices))
    unit = {str: " characters", list: " items", dict: " keys"}.get(arg.type, "")
    if arg.min is not None and arg.max is not None and not unit:
        parts.append(f"{arg.min:g} to {arg.max:g}")
    elif arg.min is not None:
        parts.append(f"at least {arg.min:g}")
    elif arg.max is not None:
        parts.append(f"at most {arg.max:g}{unit}")
    return "; ".join(parts)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _route(ep: Endpoint) -> list[str]:
    lines = [f"### {ep.method} `{ep.path}`", ""]
    doc = ep.doc or "(no description)"
    lines.append(doc[:1].upper() + doc[1:] + ("." if not doc.endswith(".") else "")
                 + ("" if ep.auth else " No login."))
    lines.append("")
    if ep.args:
        lines += ["| Argument | Type | Required | Limits | Default | Meaning |", "|---|---|---|---|---|---|"]
        for name, arg in ep.args.items():
            where = " (path)" if "{" + name + "}" in ep.path else ""
            default = "" if arg.default is None else f"`{arg.default!r}`"
            lines.append(f"| `{name}`{where} | {arg.type.__name__} | {'yes' if arg.required else 'no'} |"
                         f" {_cell(_limits(arg))} | {_cell(default)} | {_cell(arg.doc)} |")
        lines.append("")
    return lines


def _group(ep: Endpoint) -> str:
    """The module that declares the route (``api_notes``), its section in the file."""
    return getattr(ep.handler, "__module__", "").rsplit(".", 1)[-1] or "other"


def render(endpoints: list[Endpoint]) -> str:
    lines = HEADER.splitlines()
    groups: dict[str, list[Endpoint]] = {}
    for ep in endpoints:
        groups.setdefault(_group(ep), []).append(ep)
    lines += ["", "## Contents", ""]
    lines += [f"- `{name}`: " + ", ".join(f"{ep.method} `{ep.path}`" for ep in eps) for name, eps in groups.items()]
    for name, eps in groups.items():
        lines += [*([""] if lines[-1] else []), f"## `{name}`", ""]
        for ep in eps:
            lines += _route(ep)
    lines += ["## Left to the command line in v1", ""]
    lines += [f"- `{command}`: {why}" for command, why in CLI_ONLY]
    return "\n".join(lines).rstrip() + "\n"


def endpoints() -> list[Endpoint]:
    """The app's routes, as the server mounts them (no server started)."""
    from meshnode.faces.web.app import all_endpoints

    return all_endpoints()


def main() -> int:
    sys.stdout.write(render(endpoints()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
