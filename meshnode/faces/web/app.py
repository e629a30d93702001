"""The Starlette app: every route of the api_* modules, the feed, /metrics and the pages, behind one
guard that applies the request rules of protocols/web.md 3.3 and maps errors to the control socket's
shape (section 4).

The guard runs first on every request: Host (421), credentials (401, or /login for a page), then for a
POST the Origin rule (403, not for Bearer), the JSON content type (415) and the body size (413). Every
response gets the security headers; every request is counted in ``web_requests{route,status}``.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import time

from starlette.applications import Starlette
from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match, Route

from meshnode.base.errors import MeshnodeError
from meshnode.faces.web import api_a2a, api_chat, api_gate, api_gmp, api_mesh, api_mind, api_node, api_notes, api_reactor, api_spawn
from meshnode.faces.web import api_inbox, api_names
from meshnode.faces.web import auth as auth_routes, pages, prom, sse
from meshnode.faces.web.address import WebAddress
from meshnode.faces.web.auth import Auth
from meshnode.faces.web.endpoint import Endpoint, parse_args
from meshnode.faces.web.errors import challenged, error_body, error_response, status_for
from meshnode.base.config.web import LOOPBACK_NAMES, SECURITY_HEADERS, host_port, parse_listen

log = logging.getLogger("meshnode.faces.web")
API_MODULES = (api_node, api_notes, api_chat, api_mind, api_gmp, api_gate, api_a2a, api_mesh, api_reactor, api_spawn, sse,
               prom, api_inbox, api_names)


async def route_table(services, args) -> list[dict]:
    """Every API route with its arguments: the API's own documentation."""
    return [ep.describe() for ep in all_endpoints()]


ROUTES: list[Endpoint] = [Endpoint("GET", "/api", route_table, doc="the route table: method, path, args, doc")]


def all_endpoints() -> list[Endpoint]:
    return [*ROUTES, *auth_routes.ROUTES, *(ep for module in API_MODULES for ep in module.ROUTES)]


def _refusal(code: str, reason: str, headers: dict | None = None) -> JSONResponse:
    return _closing(challenged(JSONResponse(error_body(code, reason), status_code=status_for(code), headers=headers)))


def _closing(response: Response) -> Response:
    """A refused body may be partly unread: the connection cannot carry another request."""
    if response.status_code == 413:
        response.headers["connection"] = "close"
    return response


async def _json_body(request: Request, limit: int) -> dict:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise MeshnodeError("too_large", f"the request body is larger than [web] max_body_bytes ({limit})")
        chunks.append(chunk)
    body = b"".join(chunks)
    if not body.strip():
        return {}
    try:
        value = json.loads(body)
        json.dumps(value, ensure_ascii=False).encode("utf-8")  # "\ud800" parses, but no store can hold it
        return value
    except UnicodeEncodeError:
        raise MeshnodeError("bad_request", "the request body has a lone surrogate (\\ud800-\\udfff): not text")\
            from None
    except (UnicodeDecodeError, ValueError):
        raise MeshnodeError("bad_request", "the request body is not JSON") from None
    except RecursionError:  # "[[[[..." within max_body_bytes
        raise MeshnodeError("bad_request", "the request body is JSON nested too deeply") from None


def _handler(ep: Endpoint, services, body_limit: int):
    """The Starlette endpoint of a route: arguments checked, handler called, result or error shaped."""
    async def run(request: Request) -> Response:
        try:
            if ep.method == "GET":
                given, from_query = dict(request.query_params), True
            else:
                given, from_query = await _json_body(request, body_limit), False
                if not isinstance(given, dict):
                    raise MeshnodeError("bad_arguments", "the request body must be a JSON object")
            clash = sorted(set(given) & set(request.path_params))
            if clash:
                raise MeshnodeError("bad_arguments", f"{clash[0]} is part of the path; do not send it again")
            args = parse_args(ep.args, {**given, **request.path_params}, from_query=from_query)
            if ep.raw:
                response = await ep.handler(services, args, request)
            else:
                response = JSONResponse({"ok": True, "result": await ep.handler(services, args)})
        except MeshnodeError as exc:
            return _closing(error_response(exc))
        except Exception as exc:  # a bug must not take the node down: log it, answer 500, go on
            log.exception("web route %s %s failed", ep.method, ep.path)
            services.metrics.inc("web_internal_errors")
            return error_response(MeshnodeError("internal_error", f"{ep.path} failed inside the node:"
                                                f" {type(exc).__name__}"), 500)
        if ep.method == "POST" and response.status_code < 400:
            services.feed.nudge()  # something changed: the feed looks now, not at its next poll
        return response
    return run


class Guard:
    """Pure ASGI middleware: the request rules, security headers and the request counter."""

    def __init__(self, app, *, services, auth: Auth, meta: dict, address: WebAddress):
        self.app, self.services, self.auth, self.meta = app, services, auth, meta
        web = services.config.values["web"]
        self.listen_host = parse_listen(web["listen"])[0]
        self.hosts = [h.lower() for h in web["hosts"]]
        self.body_limit = int(web["max_body_bytes"])
        self.address = address  # its port once the server is bound (port 0 is chosen then)

    @property
    def port(self) -> int | None:
        return self.address.port

    def _route(self, scope) -> tuple[str, bool, bool]:
        """(label, needs credentials, is a page) of the route ``scope`` goes to."""
        for route in self.meta["routes"]:
            match, _ = route.matches(scope)
            if match != Match.NONE:
                label, needs, is_page = self.meta[id(route)]
                if label == "/metrics" and not self.auth.metrics_auth:
                    needs = False
                return label, needs, is_page
        return "other", True, False

    def host_ok(self, host: str) -> bool:
        """Whether ``Host`` names this server (DNS rebinding: a foreign name pointing here is refused).
        On a wildcard address (0.0.0.0, ::) any IP literal is fine: rebinding needs a name."""
        host = host.lower()
        names = [*LOOPBACK_NAMES, host_port(self.listen_host, 0)[:-2].lower()]
        if self.listen_host in ("0.0.0.0", "::") and _ip_literal(host, self.port):
            return True
        if self.port is None:
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            return name in names or name in self.hosts or host in self.hosts
        allowed = {f"{n}:{self.port}" for n in [*names, *self.hosts]} | set(self.hosts)
        return host in allowed

    def _check(self, scope, headers: Headers, needs: bool, is_page: bool) -> Response | None:
        host = headers.get("host", "")
        if not self.host_ok(host):
            return _refusal("bad_host", f"Host {host[:100]!r} is not this node's; add it to [web] hosts"
                                        " if a proxy uses it")
        cookies = Request(scope).cookies
        via = self.auth.identify(headers, cookies, self.services.now())
        scope["meshnode_via"] = via
        own_rules = self.meta["rules"].get(scope["path"])
        if own_rules is not None:  # a mount's rules instead of the API's (/mcp: mcp_server/guard.py)
            refused = own_rules(scope["method"], headers, via, self.body_limit)
            return None if refused is None else _refusal(*refused)
        if needs and via is None:
            if is_page and scope["method"] in ("GET", "HEAD"):
                return pages.to_login()
            return _refusal("unauthorized", "log in: open the link `meshnode web url` prints,"
                                            " or send Authorization: Bearer <token>")
        if scope["method"] in ("GET", "HEAD"):
            return None
        if via != "bearer":
            origin, site = headers.get("origin"), headers.get("sec-fetch-site")
            own = f"{scope.get('scheme', 'http')}://{host}"
            proxies = {f"https://{h}" for h in self.hosts}  # a proxy named in [web] hosts may terminate TLS
            if origin is not None and origin != own and origin.lower() not in proxies \
                    or origin is None and site != "same-origin":
                return _refusal("cross_origin", f"a change must come from this page's origin {own}"
                                                f" (Origin: {str(origin)[:100]})")
        media = headers.get("content-type", "").split(";")[0].strip().lower()
        if media != "application/json":
            return _refusal("bad_content_type", "a POST body is JSON (Content-Type: application/json)")
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.body_limit:
            return _refusal("too_large", f"the request body is larger than [web] max_body_bytes ({self.body_limit})")
        return None

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = time.perf_counter()
        label, needs, is_page = self._route(scope)
        status = [0]
        api = scope["path"].startswith("/api")

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
                headers["cache-control"] = "no-store" if api or is_page else "no-cache"
            await send(message)

        try:
            refusal = self._check(scope, Headers(scope=scope), needs, is_page)
            if refusal is not None:
                await refusal(scope, receive, send_with_headers)
            else:
                await self.app(scope, receive, send_with_headers)
        finally:
            metrics = self.services.metrics
            metrics.inc("web_requests", route=label, status=str(status[0]))
            if label != "/api/events" and (label, scope["method"]) != ("/mcp", "GET"):  # a stream's life is no latency
                metrics.observe("web_request_seconds", time.perf_counter() - started, route=label)


def _ip_literal(host: str, port: int | None) -> bool:
    name, _, given = host.rpartition(":") if not host.endswith("]") else (host, "", "")
    if port is not None and given != str(port):
        return False
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


async def _not_found(request: Request, exc) -> Response:
    return _refusal("not_found", f"no route {request.method} {request.url.path[:200]}")


async def _not_allowed(request: Request, exc) -> Response:
    return JSONResponse(error_body("method_not_allowed", f"{request.method} is not allowed on"
                                   f" {request.url.path[:200]} (every change is a POST)"), status_code=405)


def build_app(services, auth: Auth, mounts=(), address: WebAddress | None = None) -> Starlette:
    """``mounts``: (path, ASGI app, methods, rules) served behind the guard too (the MCP endpoint), where
    ``rules(method, headers, via, body_limit)`` is the (code, reason[, response headers]) of a request
    refused, else None:
    the guard checks Host and credentials, then those rules instead of the API's. ``address``: where the
    server is bound, once it is (serve_web fills it in)."""
    body_limit = int(services.config.values["web"]["max_body_bytes"])
    meta: dict = {"routes": [], "rules": {}}
    routes = []
    for ep in all_endpoints():
        route = Route(ep.path, _handler(ep, services, body_limit), methods=[ep.method])
        meta[id(route)] = (ep.path, ep.auth, False)
        routes.append(route)
    for path, handler, needs in pages.ROUTES:
        route = Route(path, handler, methods=["GET"])
        meta[id(route)] = (path if not path.startswith("/static") else "/static", needs, needs)
        routes.append(route)
    for path, asgi, methods, rules in mounts:
        route = Route(path, asgi, methods=methods)
        meta[id(route)] = (path, True, False)
        meta["rules"][path] = rules
        routes.append(route)
    meta["routes"] = routes
    address = address if address is not None else WebAddress()
    app = Starlette(routes=routes, middleware=[Middleware(Guard, services=services, auth=auth, meta=meta,
                                                          address=address)],
                    exception_handlers={404: _not_found, 405: _not_allowed})
    app.state.auth, app.state.services = auth, services
    return app


def guard_of(app: Starlette) -> Guard:
    """The app's Guard (built lazily by Starlette on the first request or here)."""
    if app.middleware_stack is None:
        app.middleware_stack = app.build_middleware_stack()
    layer = app.middleware_stack
    while not isinstance(layer, Guard):
        layer = layer.app
    return layer
