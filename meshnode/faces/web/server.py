"""The web server in the node's nursery: Hypercorn's trio worker serving the app (protocols/web.md 2.3).

No second event loop and no thread per request: ``hypercorn.trio.serve`` runs as one more task of
``run_node``'s nursery, so a request is a coroutine on the node's own loop calling the node's objects,
and cancelling that nursery stops the server with everything else. What it serves beside the notebook
(/mcp, the A2A routes) the node composes (meshnode/node/http.py): this face imports no other.
"""

from __future__ import annotations

import errno
import logging
import socket

import trio
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio import serve

from meshnode.base.errors import MeshnodeError
from meshnode.faces.web.address import WebAddress
from meshnode.faces.web.app import build_app
from meshnode.faces.web.auth import Auth
from meshnode.base.config.web import host_port, is_loopback, parse_listen

log = logging.getLogger("meshnode.faces.web")


def web_url(config, bound: str) -> str:
    """The URL a person opens for the bound ``host:port`` (a wildcard address shown as loopback)."""
    web = config.values["web"]
    scheme = "https" if web["tls_cert"] else "http"
    host, port = parse_listen(bound)
    if host in ("0.0.0.0", "::"):
        host = "127.0.0.1"
    return f"{scheme}://{host_port(host, port)}/"


def hypercorn_config(config, listen: str) -> HypercornConfig:
    web = config.values["web"]
    cfg = HypercornConfig()
    cfg.bind = [listen]
    cfg.accesslog = None  # the token never travels in a URL, but requests are the person's business
    cfg.errorlog = logging.getLogger("meshnode.faces.web.hypercorn")
    cfg.errorlog.setLevel(max(logging.WARNING, logging.getLogger().level))  # its "Running on" is ours (web:)
    cfg.include_server_header = False
    cfg.graceful_timeout = 1.0
    cfg.h11_max_incomplete_size = 64 * 1024
    if web["tls_cert"]:
        cfg.certfile = str(config.path("web", "tls_cert"))
        cfg.keyfile = str(config.path("web", "tls_key"))
    return cfg


def _refuse_if_taken(host: str, port: int) -> None:
    """``web_port_taken`` before Hypercorn tries (its own error would surface as a traceback)."""
    if port == 0:
        return
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        infos = socket.getaddrinfo(host, port, family, socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise MeshnodeError("web_bad_listen", f"[web] listen {host_port(host, port)}: {exc.strerror}") from None
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Hypercorn binds
        try:
            probe.bind(infos[0][4])
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise MeshnodeError("web_port_taken", f"{host_port(host, port)} is in use; set [web] listen to"
                                    " another port or [web] enabled = false") from None
            raise MeshnodeError("web_bad_listen", f"[web] listen {host_port(host, port)}: {exc.strerror}") from None


async def serve_web(config, services, app=None, address: WebAddress | None = None, *,
                    task_status=trio.TASK_STATUS_IGNORED) -> None:
    """Serve ``app`` (by default the notebook alone) and the event feed until cancelled;
    ``task_status.started("host:port")`` once bound, ``address`` filled in then."""
    web = config.values["web"]
    host, port = parse_listen(web["listen"])
    if not is_loopback(host) and not web["tls_cert"]:
        log.warning("the web notebook listens on %s without TLS (allow_remote = true): the token and the"
                    " session cookie travel in clear", web["listen"])
    address = address if address is not None else WebAddress()
    if app is None:
        app = build_app(services, Auth.from_config(config, services.metrics), (), address)
    _refuse_if_taken(host, port)
    async with trio.open_nursery() as nursery:
        await nursery.start(services.feed.run)
        binds = await nursery.start(serve, app, hypercorn_config(config, host_port(host, port)))
        bound = binds[0].split("://", 1)[1]
        address.set(bound, web_url(config, bound))
        log.info("web notebook on %s", address.url)
        task_status.started(bound)
