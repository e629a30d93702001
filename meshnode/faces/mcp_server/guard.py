"""The web guard's rules for ``/mcp`` (protocols/web.md 3.3, protocols/mcp.md 5), handed to the guard
with the mount (``on_demand.mounts``), apart from the SDK so that the web server does not load it: an
MCP client is a script, so only ``Authorization: Bearer`` counts (a browser's session cookie does not:
no cross-site request can use it); a POST carries a JSON-RPC body (``application/json``, at most
``[web] max_body_bytes``); GET (the server's event stream) and DELETE (the end of a session) carry
none. A 401 says how to authenticate (``WWW-Authenticate: Bearer``, RFC 6750 3: with
``error="invalid_token"`` when a Bearer token was sent and is wrong)."""

from __future__ import annotations

MCP_PATH = "/mcp"
METHODS = ["GET", "POST", "DELETE"]
REALM = "meshnode"


def refusal(method: str, headers, via: str | None, body_limit: int) -> tuple | None:
    """(code, reason) or (code, reason, response headers) when the request may not reach the MCP endpoint,
    else None."""
    if via != "bearer":
        sent = headers.get("authorization", "")[:7].lower() == "bearer "
        challenge = f'Bearer realm="{REALM}"'
        if sent:  # RFC 6750 3.1: no error code when no credentials came
            challenge += ', error="invalid_token", error_description="not this node\'s web token"'
        return ("unauthorized", "MCP needs Authorization: Bearer <token> (the token `meshnode web url` prints)",
                {"www-authenticate": challenge})
    if method != "POST":
        return None
    if headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        return "bad_content_type", "an MCP message is JSON (Content-Type: application/json)"
    length = headers.get("content-length", "")
    if length.isdigit() and int(length) > body_limit:
        return "too_large", f"the request body is larger than [web] max_body_bytes ({body_limit})"
    return None
