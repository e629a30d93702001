"""Who may use the web notebook and how (protocols/web.md 3), against a real node over HTTP."""

from __future__ import annotations

import contextlib

import pytest

from meshharness import metric
from webharness import refused, web_node


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    with web_node(tmp_path_factory.mktemp("web-auth"), env={"MESHNODE_WEB_MAX_BODY_BYTES": "65536"}) as node:
        yield node


@contextlib.contextmanager
def logged_in(web):
    """A cookie client that logged in the way login.js does, and the login's response."""
    with web.client(bearer=False) as client:
        response = client.post("/api/login", json={"token": web.token}, headers={"Origin": web.url})
        assert response.status_code == 200, response.text
        yield client, response


def test_no_or_wrong_token_is_401(web):
    """Every 401 says how to authenticate: ``WWW-Authenticate: Bearer`` (the web token; or log in)."""
    answers = []
    with web.client(bearer=False) as anonymous:
        answers += [anonymous.get("/api"), anonymous.get("/api", headers={"Authorization": "Bearer " + "x" * 43}),
                    anonymous.post("/api/notes", json={"text": "x"}, headers={"Origin": web.url}),
                    anonymous.post("/api/login", json={"token": "nope" * 11}, headers={"Origin": web.url})]
    with web.client(bearer=False, cookies={"meshnode_session": "1.abc"}) as forged:
        answers.append(forged.get("/api"))
    for answer in answers:
        refused(answer, 401, "unauthorized")
        assert answer.headers["www-authenticate"] == 'Bearer realm="meshnode"', answer.request.url
    assert "www-authenticate" not in web.raw_get("/api").headers  # with the token: answered, no challenge
    with web.client(bearer=False) as anonymous:
        assert anonymous.get("/api/session").json()["result"] == {"session": False, "via": None}
    assert web.get("/api/session") == {"session": True, "via": "bearer"}


def test_login_sets_a_strict_http_only_cookie_that_works(web):
    with logged_in(web) as (client, response):
        cookie = response.headers["set-cookie"]
        parts = {p.strip().split("=")[0].lower(): p.strip() for p in cookie.split(";")}
        assert cookie.startswith("meshnode_session=")
        assert "httponly" in parts and parts["samesite"].lower() == "samesite=strict"
        assert parts["path"] == "Path=/" and parts["max-age"] == "Max-Age=604800"
        assert "secure" not in parts  # no TLS here
        assert client.get("/api/session").json()["result"] == {"session": True, "via": "cookie"}
        assert client.get("/api").status_code == 200
        out = client.post("/api/logout", json={}, headers={"Origin": web.url})
        assert out.status_code == 200 and 'meshnode_session=""' in out.headers["set-cookie"]


def test_wrong_login_is_401_and_counted(web):
    with web.client(bearer=False) as client:
        refused(client.post("/api/login", json={"token": "nope" * 11}, headers={"Origin": web.url}), 401,
                "unauthorized")
    counters = {(m["name"], tuple(sorted(m.get("labels", {}).items()))): m["value"] for m in web.node.call("metrics")}
    assert counters.get(("web_login_failed", ())) >= 1


def test_cookie_post_from_another_origin_or_without_origin_is_403(web):
    with logged_in(web) as (client, _):
        refused(client.post("/api/logout", json={}, headers={"Origin": "http://evil.example"}), 403, "cross_origin")
        refused(client.post("/api/logout", json={}), 403, "cross_origin")  # neither Origin nor Sec-Fetch-Site
        refused(client.post("/api/logout", json={}, headers={"Sec-Fetch-Site": "cross-site"}), 403, "cross_origin")
        ok = client.post("/api/logout", json={}, headers={"Sec-Fetch-Site": "same-origin"})
        assert ok.status_code == 200
    # a script with the token needs no Origin (browsers never send the token by themselves)
    assert web.raw_post("/api/logout", {}).status_code == 200


def test_a_form_post_is_415(web):
    with logged_in(web) as (client, _):
        response = client.post("/api/logout", content=b"a=1", headers={
            "Origin": web.url, "Content-Type": "application/x-www-form-urlencoded"})
        refused(response, 415, "bad_content_type")
    refused(web._client.post("/api/logout", content=b"{}", headers={"Content-Type": "text/plain"}), 415,
            "bad_content_type")


def test_a_foreign_host_is_421(web):
    refused(web._client.get("/api", headers={"Host": "evil.example"}), 421, "bad_host")
    port = web.url.rsplit(":", 1)[1]
    refused(web._client.get("/api", headers={"Host": f"rebind.example:{port}"}), 421, "bad_host")
    refused(web._client.get("/api", headers={"Host": "127.0.0.1:1"}), 421, "bad_host")
    assert web._client.get("/api", headers={"Host": f"localhost:{port}"}).status_code == 200


def test_a_body_over_the_limit_is_413(web):
    big = b'{"token": "' + b"x" * 65536 + b'"}'
    refused(web._client.post("/api/logout", content=big, headers={"Content-Type": "application/json"}), 413,
            "too_large")

    def chunks():  # no Content-Length: counted while read
        for _ in range(20):
            yield b" " * 8192
    refused(web._client.post("/api/logout", content=chunks(), headers={"Content-Type": "application/json"}), 413,
            "too_large")


def test_bad_arguments_and_methods(web):
    refused(web.raw_post("/api/logout", {"extra": 1}), 400, "bad_arguments")
    refused(web._client.post("/api/logout", content=b"{not json", headers={"Content-Type": "application/json"}),
            400, "bad_request")
    refused(web.raw_get("/api/login"), 405, "method_not_allowed")
    refused(web.raw_get("/api/no-such-route"), 404, "not_found")


def test_security_headers_everywhere(web):
    with web.client(bearer=False) as anonymous:
        for response in (web.raw_get("/api"), anonymous.get("/api"), anonymous.get("/login"),
                         anonymous.get("/static/api.js")):
            csp = response.headers["content-security-policy"]
            assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp and "script-src 'self'" in csp
            assert response.headers["x-content-type-options"] == "nosniff"
            assert response.headers["referrer-policy"] == "no-referrer"
        assert web.raw_get("/api").headers["cache-control"] == "no-store"


def test_pages_redirect_to_login_and_static_files_are_plain_names(web):
    with web.client(bearer=False) as anonymous:
        page = anonymous.get("/mind")
        assert page.status_code == 303 and page.headers["location"] == "/login"
        login = anonymous.get("/login")
        assert login.status_code == 200 and "/static/login.js" in login.text
        js = anonymous.get("/static/api.js")
        assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
        assert js.headers["cache-control"] == "no-cache" and js.headers["etag"]  # asked again, answered 304
        again = anonymous.get("/static/api.js", headers={"If-None-Match": js.headers["etag"]})
        assert again.status_code == 304 and not again.content
        assert anonymous.get("/static/api.js", headers={"If-None-Match": '"other"'}).content == js.content
        for bad in ("/static/..%2Fapp.py", "/static/../app.py", "/static/", "/static/.hidden.js",
                    "/static/app.py"):
            assert anonymous.get(bad).status_code in (401, 404), bad  # no route, or no such plain name
            assert web.raw_get(bad).status_code == 404, bad


def test_login_rate_limit_then_rotation_ends_sessions(tmp_path):
    with web_node(tmp_path, name="rot") as web:
        with logged_in(web) as (client, _), web.client(bearer=False) as attacker:
            for _ in range(5):
                refused(attacker.post("/api/login", json={"token": "w" * 43}, headers={"Origin": web.url}), 401,
                        "unauthorized")
            # the sixth wrong try from that address waits a minute, and is told how long
            limited = attacker.post("/api/login", json={"token": "w" * 43}, headers={"Origin": web.url})
            refused(limited, 429, "too_many_logins")
            assert 1 <= int(limited.headers["retry-after"]) <= 60
            # the right token is never refused: a local process guessing cannot lock the person out
            right = attacker.post("/api/login", json={"token": web.token}, headers={"Origin": web.url})
            assert right.status_code == 200 and "meshnode_session" in right.headers["set-cookie"], right.text
            assert client.get("/api/session").json()["result"]["via"] == "cookie"  # sessions are unaffected
            assert metric(web.node, "web_login_limited") == 1 and metric(web.node, "web_login_failed") == 5

            link = web.node.cli("web", "url", "--rotate").splitlines()[0]
            new = link.split("#t=", 1)[1]
            assert new != web.token and link.startswith(web.url.rsplit(":", 1)[0])
            refused(client.get("/api"), 401, "unauthorized")  # the old session ended
            refused(web.raw_get("/api"), 401, "unauthorized")  # and the old token
            with web.client(bearer=False, headers={"Authorization": f"Bearer {new}"}) as fresh:
                assert fresh.get("/api").status_code == 200


def test_the_route_table_describes_every_route(web):
    table = {(r["method"], r["path"]): r for r in web.get("/api")}
    login = table[("POST", "/api/login")]
    assert login["auth"] is False and login["args"]["token"] == {
        "type": "str", "required": True, "max": 200, "doc": "the token of web.token"}
    assert table[("GET", "/api")]["auth"] is True and ("GET", "/api/session") in table
    assert all(method in ("GET", "POST") and path.startswith(("/api", "/metrics")) for method, path in table)
