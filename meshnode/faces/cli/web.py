"""``meshnode web url [--rotate]``: the login link of the web notebook.

    meshnode web url            http://127.0.0.1:8470/login#t=TOKEN (the token file is created if missing)
    meshnode web url --rotate   a new token first: every browser session and script token ends

Works with the node stopped (it reads config.toml and the token file only), in a home ``meshnode init``
made: on any other folder it is an error, and nothing is created (common._config). The token rides in the
link's fragment, which a browser never sends to a server, so it stays out of logs and Referers.
"""

from __future__ import annotations

from meshnode.faces.cli.common import _ask_node, _config
from meshnode.net.control import ControlError
from meshnode.base.config.web import host_port, parse_listen


def login_url(config, token: str, bound: str | None = None) -> str:
    """The link for ``[web] listen``, or for the address a running node bound (``bound``, its URL)."""
    if bound:
        return f"{bound.rstrip('/')}/login#t={token}"
    web = config.values["web"]
    host, port = parse_listen(web["listen"])
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    scheme = "https" if web["tls_cert"] else "http"
    return f"{scheme}://{host_port(host, port)}/login#t={token}"


def cmd_url(args) -> int:
    from meshnode.store.home.web_token import read_token, write_token

    config = _config(args)
    path = config.path("web", "token_path")
    token = write_token(path) if args.rotate else read_token(path)
    bound = _running_web(config)
    print(login_url(config, token, bound))
    if bound is None and config.values["web"]["listen"].endswith(":0"):
        print("(listen port 0: the node picks a free port at start; its `web:` line shows it)")
    if not config.values["web"]["enabled"]:
        print("(the web notebook is off: [web] enabled = false)")
    return 0


def _running_web(config) -> str | None:
    """The notebook's URL as the running node bound it (port 0 picks a free one); None when no node runs."""
    try:
        status = _ask_node(config, "status", required=False, timeout=5.0)
    except ControlError:
        return None
    return (status or {}).get("web")
