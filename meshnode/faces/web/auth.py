"""Who may use the web notebook (protocols/web.md 3): the token, stateless sessions, login limits.

The token is 32 random bytes in ``<home>/web.token`` (mode 0600, refused when wider: home/web_token.py,
the home's data, which ``meshnode web url`` reads with the node stopped). A browser logs in
once with it and then holds ``meshnode_session=<issued_ms>.<hmac(token, "session:" + issued_ms)>``:
nothing is kept on the server, a restart keeps sessions and a new token (``meshnode web url --rotate``)
ends them all. Scripts send ``Authorization: Bearer <token>`` instead.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import os
from collections import deque
from pathlib import Path

from starlette.requests import Request
from starlette.responses import JSONResponse

from meshnode.base.errors import MeshnodeError
from meshnode.store.home.web_token import new_token, read_token
from meshnode.faces.web.endpoint import Arg, Endpoint
from meshnode.faces.web.errors import error_body, status_for

COOKIE = "meshnode_session"
LOGIN_FAILURES = 5        # wrong tokens from one source within LOGIN_WINDOW_S; then it waits LOGIN_BLOCK_S
LOGIN_WINDOW_S = 60.0
LOGIN_BLOCK_S = 60.0
GLOBAL_FAILURES = 60      # wrong tokens from all sources within the window; then every wrong one waits too
CLOCK_SLACK_MS = 60_000  # a session issued this far in the future (clock step) still counts


class LoginLimiter:
    """Wrong tokens, per source and in all: ``failures`` from one source (its address and User-Agent,
    see ``source``) within ``window_s`` make that source wait ``block_s``; ``global_failures`` from
    everywhere make every source wait. It only ever delays a wrong token: the login checks the token
    first, so no other local process can lock the person out (on loopback every process is
    127.0.0.1). Pure: time is passed in."""

    def __init__(self, failures: int = LOGIN_FAILURES, window_s: float = LOGIN_WINDOW_S,
                 block_s: float = LOGIN_BLOCK_S, max_clients: int = 4096, global_failures: int = GLOBAL_FAILURES):
        self.failures, self.window_s, self.block_s, self.max_clients = failures, window_s, block_s, max_clients
        self.global_failures = global_failures
        self._recent: dict[str, deque] = {}
        self._blocked: dict[str, float] = {}
        self._all: deque = deque()
        self._all_blocked = 0.0

    def wait_s(self, client: str, now: float) -> float:
        """Seconds before a wrong token from ``client`` is answered again (0: now)."""
        until = self._blocked.get(client)
        if until is not None and now >= until:
            del self._blocked[client]
            until = None
        return max(0.0, (until or 0.0) - now, self._all_blocked - now)

    def blocked(self, client: str, now: float) -> bool:
        return self.wait_s(client, now) > 0

    def failed(self, client: str, now: float) -> None:
        if len(self._recent) >= self.max_clients and client not in self._recent:
            self._forget_old(now)
        if len(self._blocked) >= self.max_clients:  # the blocks ending first go (the global cap remains)
            for gone in sorted(self._blocked, key=self._blocked.get)[: self.max_clients // 2]:
                del self._blocked[gone]
        times = self._recent.setdefault(client, deque())
        times.append(now)
        while times and times[0] <= now - self.window_s:
            times.popleft()
        if len(times) >= self.failures:
            self._blocked[client] = now + self.block_s
            times.clear()
        self._all.append(now)
        while self._all and self._all[0] <= now - self.window_s:
            self._all.popleft()
        if len(self._all) >= self.global_failures:
            self._all_blocked = now + self.block_s
            self._all.clear()

    def _forget_old(self, now: float) -> None:
        for client in [c for c, t in self._recent.items() if not t or t[-1] <= now - self.window_s]:
            del self._recent[client]
        if len(self._recent) >= self.max_clients:  # all recent: the oldest go
            for client in list(self._recent)[: self.max_clients // 2]:
                del self._recent[client]


class Auth:
    """The token (re-read when its file changes, so a rotation applies at once), sessions and limits."""

    def __init__(self, token_path: Path, *, session_hours: float, secure: bool, metrics=None,
                 metrics_auth: bool = True):
        self.token_path, self.secure, self.metrics = token_path, secure, metrics
        self.session_ms = int(session_hours * 3600 * 1000)
        self.metrics_auth = metrics_auth
        self.limiter = LoginLimiter()
        self._token = read_token(token_path)
        self._stamp = self._file_stamp()

    @classmethod
    def from_config(cls, config, metrics=None) -> "Auth":
        web = config.values["web"]
        return cls(config.path("web", "token_path"), session_hours=float(web["session_hours"]),
                   secure=bool(web["tls_cert"]), metrics=metrics, metrics_auth=bool(web["metrics_auth"]))

    def _file_stamp(self):
        try:
            st = os.stat(self.token_path)
        except OSError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size, st.st_mode)

    @property
    def token(self) -> str:
        stamp = self._file_stamp()
        if stamp != self._stamp:
            try:
                self._token = read_token(self.token_path, create=False)
            except MeshnodeError:
                self._token = new_token()  # unusable file: nobody gets in until it is fixed
            self._stamp = stamp
        return self._token

    def token_ok(self, given: str) -> bool:
        return hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode())

    def _mac(self, issued_ms: int) -> str:
        return hmac.new(self.token.encode(), f"session:{issued_ms}".encode(), hashlib.sha256).hexdigest()

    def session_value(self, issued_ms: int) -> str:
        return f"{issued_ms}.{self._mac(issued_ms)}"

    def session_ok(self, value: str | None, now_ms: int) -> bool:
        if not value or len(value) > 200 or "." not in value:
            return False
        issued, _, mac = value.partition(".")
        if not (issued.isascii() and issued.isdigit()):  # "²".isdigit() is True, int("²") fails
            return False
        issued_ms = int(issued)
        if not issued_ms - CLOCK_SLACK_MS <= now_ms < issued_ms + self.session_ms + CLOCK_SLACK_MS:
            return False
        return hmac.compare_digest(mac.encode("ascii", "replace"), self._mac(issued_ms).encode())

    def identify(self, headers, cookies: dict, now_ms: int) -> str | None:
        """``"bearer"``, ``"cookie"`` or None for a request's credentials."""
        header = headers.get("authorization", "")
        if header[:7].lower() == "bearer ":
            return "bearer" if self.token_ok(header[7:].strip()) else None
        return "cookie" if self.session_ok(cookies.get(COOKIE), now_ms) else None

    def set_cookie(self, response, now_ms: int) -> None:
        response.set_cookie(COOKIE, self.session_value(now_ms), max_age=self.session_ms // 1000, path="/",
                            httponly=True, samesite="strict", secure=self.secure)

    def clear_cookie(self, response) -> None:
        response.delete_cookie(COOKIE, path="/", httponly=True, samesite="strict", secure=self.secure)


def source(request: Request) -> str:
    """Whose wrong tokens count together: the client address and a digest of its User-Agent (on
    loopback every local process shares 127.0.0.1; another program's guesses do not delay the
    browser's, unless it also copies the browser's User-Agent)."""
    host = request.client.host if request.client else "unknown"
    agent = request.headers.get("user-agent", "")[:512].encode("utf-8", "replace")
    return f"{host[:64]} {hashlib.sha256(agent).hexdigest()[:16]}"


async def login(services, args: dict, request: Request):
    auth: Auth = request.app.state.auth
    client, now = source(request), services.now() / 1000
    if not auth.token_ok(args["token"]):  # the right token first: the limiter never refuses it
        wait = auth.limiter.wait_s(client, now)
        if wait > 0:
            services.metrics.inc("web_login_limited")
            retry = max(1, math.ceil(wait))
            exc = MeshnodeError("too_many_logins", f"{LOGIN_FAILURES} wrong tokens within a minute from this"
                                f" client (or too many from all); the right token still logs in; try again"
                                f" in {retry} s")
            return JSONResponse(error_body(exc.code, exc.reason), status_code=status_for(exc.code),
                                headers={"retry-after": str(retry)})
        auth.limiter.failed(client, now)
        services.metrics.inc("web_login_failed")
        raise MeshnodeError("unauthorized", "wrong token; open the link `meshnode web url` prints")
    response = JSONResponse({"ok": True, "result": {"session": True}})
    auth.set_cookie(response, services.now())
    return response


async def logout(services, args: dict, request: Request):
    response = JSONResponse({"ok": True, "result": {"session": False}})
    request.app.state.auth.clear_cookie(response)
    return response


async def session(services, args: dict, request: Request):
    via = request.app.state.auth.identify(request.headers, request.cookies, services.now())
    return JSONResponse({"ok": True, "result": {"session": via is not None, "via": via}})


ROUTES: list[Endpoint] = [
    Endpoint("POST", "/api/login", login, {"token": Arg(str, required=True, max=200, doc="the token of web.token")},
             doc="log in with the token (from the link `meshnode web url` prints); sets the session cookie",
             auth=False, raw=True),
    Endpoint("POST", "/api/logout", logout, doc="end this browser's session (clears the cookie)", auth=False,
             raw=True),
    Endpoint("GET", "/api/session", session, doc="whether this request carries a valid session or token",
             auth=False, raw=True),
]
