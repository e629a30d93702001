"""Bad input on every route, driven by the route table ``GET /api`` returns (so routes added by any
module are covered without a line here): each declared argument missing, of the wrong type, out of
range, and an unknown key -> 400 ``bad_arguments`` with a reason, and the store unchanged; no or a
wrong token -> 401; a GET changes nothing. And every error code the notebook and mesh routes can
raise has the HTTP status it should (``errors.status_for``)."""

from __future__ import annotations

import importlib.util

import re
from pathlib import Path
from urllib.parse import quote

import pytest

from meshnode.faces.web.errors import status_for
from webharness import WebNode, web_node

TYPES = {"str": str, "int": int, "float": float, "bool": bool, "list": list, "dict": dict}
UNKNOWN = "zz_not_an_argument"


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with web_node(tmp_path_factory.mktemp("webbad"), name="bad") as node:
        yield node


@pytest.fixture(scope="module")
def table(web):
    routes = web.get("/api")
    assert len(routes) > 30 and all({"method", "path", "args", "auth"} <= set(r) for r in routes)
    return routes


def counts(web: WebNode) -> dict:
    return web.get("/api/status")["counts"]


def path_params(route: dict) -> list[str]:
    return re.findall(r"{(\w+)}", route["path"])


def valid(spec: dict):
    """A value the argument accepts (the one given to every other argument while one is made bad)."""
    kind = TYPES[spec["type"]]
    if spec.get("choices"):
        return spec["choices"][0]
    if kind in (int, float):
        low, high = spec.get("min"), spec.get("max")
        value = spec.get("default") if spec.get("default") is not None else (low if low is not None else 1)
        return kind(min(value, high) if high is not None else value)
    return {str: "x", bool: True, list: [], dict: {}}[kind]


def bad_values(spec: dict, textual: bool) -> list[tuple[str, object]]:
    """(what, value) for each way the argument can be wrong; ``textual``: sent as text (query, path)."""
    kind, out = TYPES[spec["type"]], []
    wrong = {int: "abc", float: "abc", bool: "maybe"} if textual else \
        {str: 12345, int: "abc", float: "abc", bool: "yes", list: "abc", dict: [1]}
    if kind in wrong:
        out.append(("wrong type", wrong[kind]))
    if spec.get("choices") and kind is str:
        out.append(("not a choice", "zz-no-such-choice"))
    if kind in (int, float):
        if spec.get("max") is not None:
            out.append(("above max", kind(spec["max"]) + 1))
        if spec.get("min") is not None:
            out.append(("below min", kind(spec["min"]) - 1))
    elif spec.get("max") is not None and kind is str:
        out.append(("too long", "x" * (int(spec["max"]) + 1)))
    elif spec.get("max") is not None and kind is list and not textual:
        out.append(("too many items", ["x"] * (int(spec["max"]) + 1)))
    if textual:
        out = [(what, v if isinstance(v, str) else ",".join(v) if isinstance(v, list) else str(v)) for what, v in out]
    return out


def request(web: WebNode, route: dict, args: dict, path: dict):
    url = route["path"]
    for name, value in path.items():
        url = url.replace("{" + name + "}", quote(str(value), safe=""))
    if route["method"] == "GET":
        return web.raw_get(url, **args)
    return web.raw_post(url, args)


def cases(route: dict):
    """(label, args, path values) of every bad request for the route."""
    in_path = path_params(route)
    specs = route["args"]
    base_path = {name: valid(specs.get(name, {"type": "str"})) for name in in_path}
    required = {n: valid(s) for n, s in specs.items() if s["required"] and n not in in_path}
    textual = route["method"] == "GET"
    for name, spec in specs.items():
        if name in in_path:
            for what, value in bad_values(spec, textual=True):
                yield f"path {name} {what}", required, {**base_path, name: value}
            continue
        others = {n: v for n, v in required.items() if n != name}
        if spec["required"]:
            yield f"{name} missing", others, base_path
        for what, value in bad_values(spec, textual):
            yield f"{name} {what}", {**others, name: value}, base_path
    yield "unknown key", {**required, UNKNOWN: "1"}, base_path


def test_every_bad_argument_is_refused_before_anything_runs(web, table):
    before = counts(web)
    checked, problems = 0, []
    for route in table:
        for label, args, path in cases(route):
            r = request(web, route, args, path)
            body = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
            allowed = {(400, "bad_arguments")}
            if label.endswith(("too long", "too many items")):  # longer than [web] max_body_bytes: refused first
                allowed.add((413, "too_large"))
            if (r.status_code, body.get("code")) not in allowed or not body.get("reason"):
                problems.append(f"{route['method']} {route['path']} ({label}): {r.status_code} {r.text[:200]}")
            checked += 1
        now = counts(web)
        assert now == before, f"{route['method']} {route['path']} changed the store on bad input: {before} -> {now}"
    assert not problems, "\n".join(problems)
    assert checked > 100  # the sweep reached the routes' arguments, not just the unknown key


def test_every_route_needs_credentials(web, table):
    forged = {"Authorization": "Bearer " + "0" * len(web.token)}
    problems, checked = [], 0
    before = counts(web)
    with web.client(bearer=False) as client:
        for route in [r for r in table if r["auth"]]:
            url = re.sub(r"{\w+}", "x", route["path"])
            for headers, who in (({}, "no token"), (forged, "wrong token")):
                r = client.request(route["method"], url, headers=headers,
                                   json={} if route["method"] == "POST" else None)
                body = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
                if r.status_code != 401 or body.get("code") != "unauthorized" or not body.get("reason"):
                    problems.append(f"{route['method']} {route['path']} ({who}): {r.status_code} {r.text[:120]}")
                checked += 1
    assert not problems, "\n".join(problems)
    assert checked > 60 and counts(web) == before


def test_get_routes_change_nothing(web, table):
    web.post("/api/notes", {"text": "something to look at"})  # so that lists have a row
    before = counts(web)
    with web.client() as client:
        for route in [r for r in table if r["method"] == "GET"]:
            path = {n: valid(route["args"].get(n, {"type": "str"})) for n in path_params(route)}
            url = route["path"]
            for name, value in path.items():
                url = url.replace("{" + name + "}", quote(str(value), safe=""))
            required = {n: valid(s) for n, s in route["args"].items() if s["required"] and n not in path}
            with client.stream("GET", url, params=required) as r:  # a stream (SSE) is left at its headers
                assert r.status_code < 500, f"GET {route['path']}: {r.status_code} {r.read()[:200]!r}"
            assert counts(web) == before, f"GET {route['path']} changed the store"


# --- every error code a route can raise has its status --------------------------------------------

REACHED = [  # the modules the routes of api_node, api_notes, api_mesh, api_names and api_spawn call into (and the actions they run)
    "meshnode.faces.web.api_node", "meshnode.faces.web.api_notes", "meshnode.faces.web.api_mesh", "meshnode.faces.web.ids",
    "meshnode.faces.web.endpoint", "meshnode.faces.web.app", "meshnode.faces.web.services", "meshnode.node.run", "meshnode.domain.knowledge", "meshnode.records.knowledge",
    "meshnode.records.knowledge_edits", "meshnode.domain.notes", "meshnode.records.ethics", "meshnode.records.reputation.manual",
    "meshnode.records.reputation.reading", "meshnode.records.reputation.records", "meshnode.domain.consensus.result",
    "meshnode.records.consensus", "meshnode.domain.consensus.cogvote", "meshnode.store.short_ids", "meshnode.store.database",
    "meshnode.base.identity.did", "meshnode.net.mesh", "meshnode.net.mesh_sync", "meshnode.net.mesh_consensus",
    "meshnode.net.mesh_reputation", "meshnode.net.mesh_lookup", "meshnode.app.dispatch", "meshnode.app.actor",
    "meshnode.app.context", "meshnode.app.actions.node_status", "meshnode.app.actions.peers",
    "meshnode.app.actions.containers", "meshnode.app.actions.meshconsensus", "meshnode.app.actions.reputation",
    "meshnode.app.actions.children", "meshnode.app.actions.reactor", "meshnode.app.actions.mind",
    "meshnode.faces.web.api_names", "meshnode.app.actions.names", "meshnode.store.names", "meshnode.domain.names",
    "meshnode.faces.web.api_spawn", "meshnode.engines.spawn.names", "meshnode.engines.spawn.friends",
]
EXPECTED = {
    404: {"not_found", "unknown_command", "unknown_evidence", "unknown_target", "no_reputation", "not_a_child"},
    409: {"cognition_off", "reactor_off", "no_committee", "duplicate", "refused", "too_many", "no_friends",
          "not_allowed", "paused", "name_taken", "petname_taken"},  # a name another holds: a conflict
    413: {"too_large"},
    500: {"internal_error"},
    502: {"unreachable", "sync_failed", "slow_frame", "bad_sync", "bad_announce", "identity_mismatch", "revoked"},
    503: {"db_busy", "db_full", "db_error", "cannot_open", "no_database", "port_in_use", "node_not_running"},
    504: {"timeout"},
}
_RAISED = re.compile(r'\b\w*Error\(\s*"([a-z][a-z0-9_]*)"')


def raised_codes() -> list[str]:
    return sorted({code for module in REACHED for code in _RAISED.findall(source(module))})


def source(module: str) -> str:
    """A module's text, found where it is (not imported: the scan reads, it does not run)."""
    return Path(importlib.util.find_spec(module).origin).read_text(encoding="utf-8")


def expected_status(code: str) -> int:
    return next((status for status, codes in EXPECTED.items() if code in codes), 400)  # else: bad input


def test_every_error_code_a_route_raises_has_its_status():
    wrong = {code: (status_for(code), expected_status(code)) for code in raised_codes()
             if status_for(code) != expected_status(code)}
    assert not wrong, f"code: (errors.status_for, expected): {wrong}"


def test_the_scan_finds_the_codes():
    found = raised_codes()
    assert {"bad_arguments", "not_found", "empty_note", "bad_before", "bad_query", "dangling_reference"} <= set(found)
    assert {code for codes in EXPECTED.values() for code in codes} <= set(found)  # no stale entries
