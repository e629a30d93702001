"""Page shells and static files: HTML, CSS and JS shipped in meshnode/faces/web/static (nothing from outside).

A page needs a session; a browser without one is sent to /login, whose script logs in with the token
from the link's fragment. Static files are open (they hold no data), by plain name only: no folders,
no listing, no ``..``.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from meshnode.faces.web.errors import error_body

STATIC = Path(__file__).parent / "static"
PAGES = {"/": "conversation.html", "/mind": "mind.html", "/goals": "goals.html", "/review": "review.html",
         "/mesh": "mesh.html", "/knowledge": "knowledge.html", "/reactor": "reactor.html",
         "/inbox": "inbox.html"}
LOGIN = "/login"
_NAME = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,99}$")
_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".css": "text/css; charset=utf-8", ".png": "image/png", ".svg": "image/svg+xml", ".ico": "image/x-icon",
          ".json": "application/json", ".txt": "text/plain; charset=utf-8"}


def _missing(name: str) -> Response:
    return JSONResponse(error_body("not_found", f"no static file {name[:100]!r}"), status_code=404)


MAX_FILE = 2 << 20
_held: dict[str, tuple[int, bytes, str]] = {}  # name -> (mtime_ns, body, etag): served from memory


def _load(name: str) -> tuple[bytes, str] | None:
    """A static file's bytes and ETag, read once and again only when the file changed (a page loads
    a dozen of these: reading each from disk in a worker thread was a third of a page's paint)."""
    path = STATIC / name
    if not _NAME.match(name) or ".." in name or path.suffix not in _TYPES:
        return None
    try:
        stat = path.stat()
    except OSError:
        return None
    if not path.is_file() or stat.st_size > MAX_FILE:
        return None
    held = _held.get(name)
    if held is None or held[0] != stat.st_mtime_ns:
        body = path.read_bytes()
        held = _held[name] = (stat.st_mtime_ns, body, '"' + hashlib.blake2b(body, digest_size=12).hexdigest() + '"')
    return held[1], held[2]


def static_file(name: str, request: Request | None = None) -> Response:
    """A file of static/ by its plain name (refused: folders, hidden files, unknown types), from
    memory, with an ETag: the browser asks again each time (``no-cache``: a page never mixes two
    versions of its modules after an upgrade) and gets a 304 when nothing changed."""
    loaded = _load(name)
    if loaded is None:
        return _missing(name)
    body, etag = loaded
    headers = {"ETag": etag, "Cache-Control": "no-cache"}
    if request is not None and etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type=_TYPES[Path(name).suffix], headers=headers)


def page(name: str):
    async def show(request: Request) -> Response:
        return static_file(name, request)
    return show


async def static(request: Request) -> Response:
    return static_file(request.path_params["name"], request)


async def favicon(request: Request) -> Response:
    return Response(status_code=204)


def to_login() -> Response:
    return RedirectResponse(LOGIN, status_code=303)


# (path, handler, needs a session); the app wraps them with its rules
ROUTES = [*((path, page(name), True) for path, name in PAGES.items()),
          (LOGIN, page("login.html"), False),
          ("/static/{name}", static, False),
          ("/favicon.ico", favicon, False)]
