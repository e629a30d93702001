"""Page shells and static files: HTML, CSS and JS shipped in meshnode/faces/web/static (nothing from outside).

A page needs a session; a browser without one is sent to /login, whose script logs in with the token
from the link's fragment. Static files are open (they hold no data), by plain name only: no folders,
no listing, no ``..``.
"""

from __future__ import annotations

import re
from pathlib import Path

from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response

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


def static_file(name: str) -> Response:
    """A file of static/ by its plain name (refused: folders, hidden files, unknown types)."""
    path = STATIC / name
    if not _NAME.match(name) or ".." in name or path.suffix not in _TYPES or not path.is_file():
        return _missing(name)
    return FileResponse(path, media_type=_TYPES[path.suffix])


def page(name: str):
    async def show(request: Request) -> Response:
        return static_file(name)
    return show


async def static(request: Request) -> Response:
    return static_file(request.path_params["name"])


async def favicon(request: Request) -> Response:
    return Response(status_code=204)


def to_login() -> Response:
    return RedirectResponse(LOGIN, status_code=303)


# (path, handler, needs a session); the app wraps them with its rules
ROUTES = [*((path, page(name), True) for path, name in PAGES.items()),
          (LOGIN, page("login.html"), False),
          ("/static/{name}", static, False),
          ("/favicon.ico", favicon, False)]
