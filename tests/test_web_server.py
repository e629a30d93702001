"""The web server's parts without a node: argument checking, error statuses, serve and cancel."""

from __future__ import annotations

import pytest

from meshnode.errors import MeshnodeError
from meshnode.web.endpoint import Arg, Endpoint, parse_args
from meshnode.web.errors import error_response, status_for

SPEC = {
    "text": Arg(str, required=True, max=10),
    "limit": Arg(int, min=1, max=500, default=50),
    "ratio": Arg(float, min=0, max=1),
    "on": Arg(bool, default=False),
    "ids": Arg(list, max=3),
    "mode": Arg(str, choices=("a", "b")),
    "extra": Arg(dict),
}


def bad(given, *, from_query=False) -> str:
    with pytest.raises(MeshnodeError) as info:
        parse_args(SPEC, given, from_query=from_query)
    assert info.value.code == "bad_arguments" and info.value.reason
    return info.value.reason


def test_parse_args_json_types_and_defaults():
    got = parse_args(SPEC, {"text": "hi", "ratio": 1, "ids": ["x"], "extra": {"k": 1}}, from_query=False)
    assert got == {"text": "hi", "limit": 50, "ratio": 1, "on": False, "ids": ["x"], "mode": None,
                   "extra": {"k": 1}}


def test_parse_args_query_strings_are_converted():
    got = parse_args(SPEC, {"text": "hi", "limit": "12", "ratio": "0.5", "on": "true", "ids": "a,b"},
                     from_query=True)
    assert (got["limit"], got["ratio"], got["on"], got["ids"]) == (12, 0.5, True, ["a", "b"])
    assert parse_args(SPEC, {"text": "x", "on": "0"}, from_query=True)["on"] is False


def test_parse_args_refusals_name_the_argument():
    assert "text" in bad({})
    assert "nope" in bad({"text": "x", "nope": 1})
    assert "limit" in bad({"text": "x", "limit": True})  # a bool is never an int
    assert "limit" in bad({"text": "x", "limit": "3"})  # JSON: exact types
    assert "limit" in bad({"text": "x", "limit": 0})
    assert "limit" in bad({"text": "x", "limit": 501})
    assert "text" in bad({"text": "x" * 11})
    assert "ids" in bad({"text": "x", "ids": ["1", "2", "3", "4"]})
    assert "mode" in bad({"text": "x", "mode": "c"})
    assert "ratio" in bad({"text": "x", "ratio": float("nan")})
    assert "limit" in bad({"text": "x", "limit": "twelve"}, from_query=True)
    assert "on" in bad({"text": "x", "on": "maybe"}, from_query=True)
    assert "extra" in bad({"text": "x", "extra": "{}"}, from_query=True)
    assert "object" in bad(["text"])


def test_endpoint_refuses_other_methods_and_types():
    async def h(services, args):
        return None

    with pytest.raises(ValueError):
        Endpoint("PUT", "/api/x", h)
    with pytest.raises(ValueError):
        Endpoint("GET", "/api/x", h, {"a": Arg(set)})
    assert Endpoint("GET", "/api/x", h, {"a": Arg(int, max=5)}).describe()["args"]["a"] == {
        "type": "int", "required": False, "max": 5}


@pytest.mark.parametrize("code, status", [
    ("bad_request", 400), ("bad_arguments", 400), ("bad_whatever", 400), ("empty_note", 400),
    ("note_too_long", 400), ("unauthorized", 401), ("cross_origin", 403), ("not_found", 404),
    ("draft_not_found", 404), ("unknown_command", 404), ("cognition_off", 409), ("reactor_off", 409),
    ("conflict", 409), ("draft_changed", 409), ("not_shown", 409), ("too_large", 413),
    ("bad_content_type", 415), ("bad_host", 421), ("too_many_logins", 429), ("internal_error", 500),
    ("something_new", 400),
])
def test_status_for(code, status):
    assert status_for(code) == status


def test_error_response_has_the_control_shape():
    response = error_response(MeshnodeError("not_found", "no such note"))
    assert response.status_code == 404
    assert response.body == b'{"ok":false,"code":"not_found","reason":"no such note"}'
