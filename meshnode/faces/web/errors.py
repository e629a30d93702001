"""MeshnodeError codes as HTTP statuses (protocols/web.md section 4), and the error body."""

from __future__ import annotations

from starlette.responses import JSONResponse

from meshnode.base.errors import MeshnodeError

_EXACT = {
    # the request is wrong
    "bad_request": 400, "empty_note": 400, "note_too_long": 400, "bad_arguments": 400,
    "unauthorized": 401,
    "cross_origin": 403,
    "not_found": 404, "no_reputation": 404, "no_job": 404, "not_a_child": 404,
    "method_not_allowed": 405,
    # right request, wrong moment: a state refusal of the node, the gate or GMP
    "cognition_off": 409, "paused": 409, "reactor_off": 409, "conflict": 409, "draft_changed": 409, "not_shown": 409,
    "not_allowed": 409, "already_decided": 409, "bad_state": 409, "bad_transition": 409, "goal_closed": 409,
    "offer_expired": 409, "needs_decision": 409, "nothing_to_review": 409, "nothing_to_commit": 409,
    "no_committee": 409, "duplicate": 409, "no_offer": 409, "no_candidates": 409, "refused": 409, "too_many": 409, "no_friends": 409,
    "too_many_children": 409, "too_deep": 409, "home_exists": 409, "parent_never_ran": 409, "no_free_port": 409,
    "too_large": 413,
    "bad_content_type": 415,
    "bad_host": 421,
    "too_many_logins": 429,
    # the node failed, or a peer did
    "internal_error": 500, "io_error": 500, "spawn_failed": 500, "seed_failed": 500, "start_failed": 500,
    "not_reachable": 504,
    "unreachable": 502, "sync_failed": 502, "slow_frame": 502, "bad_sync": 502, "bad_announce": 502,
    "identity_mismatch": 502, "revoked": 502, "fetch_failed": 502,
    "db_busy": 503, "db_full": 503, "db_error": 503, "cannot_open": 503, "no_database": 503, "port_in_use": 503,
    "node_not_running": 503, "too_many_streams": 503,
    "timeout": 504,
}


def status_for(code: str) -> int:
    """The HTTP status of an error code; unmapped codes are the client's fault (400)."""
    if code in _EXACT:
        return _EXACT[code]
    if code.endswith("_not_found") or code.startswith("unknown_"):
        return 404
    if code.startswith("bad_"):
        return 400
    if code.startswith("not_allowed") or code.endswith(("_conflict", "_taken")):  # name_taken, petname_taken
        return 409
    return 400


def error_body(code: str, reason: str) -> dict:
    return {"ok": False, "code": code, "reason": reason}


CHALLENGE = 'Bearer realm="meshnode"'  # a 401's WWW-Authenticate: the web token as a bearer token (or log in)


def challenged(response: JSONResponse) -> JSONResponse:
    """A 401 says how to authenticate (RFC 9110 11.6.1: ``WWW-Authenticate``), unless it says so already."""
    if response.status_code == 401 and "www-authenticate" not in response.headers:
        response.headers["www-authenticate"] = CHALLENGE
    return response


def error_response(exc: MeshnodeError, status: int | None = None) -> JSONResponse:
    """The control socket's error shape with the code's status."""
    return challenged(JSONResponse(error_body(exc.code, exc.reason), status_code=status or status_for(exc.code)))
