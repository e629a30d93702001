"""Edge cases found in review of the web notebook (protocols/web.md 3.3, 4): input that used to crash a
route with 500 (or the guard itself) is refused with a typed 4xx, and the store is unchanged."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest

from webharness import WebNode


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    node = WebNode(tmp_path_factory.mktemp("webreview"), "review")
    try:
        yield node
    finally:
        node.stop()


def refused(response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert body["ok"] is False and body["code"] == code and body["reason"], body


def raw_request(web: WebNode, head: bytes) -> bytes:
    """One HTTP/1.1 request as bytes (what httpx will not send), the whole answer back."""
    url = urlsplit(web.url)
    with socket.create_connection((url.hostname, url.port), timeout=10) as sock:
        sock.sendall(head.replace(b"HOST", url.netloc.encode()))
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


INTEGERS = [("GET", "/api/threads", "before"), ("GET", "/api/mind/ticks", "before"),
            ("GET", "/api/reactor/events", "since_ms")]


@pytest.mark.parametrize("method,path,name", INTEGERS)
@pytest.mark.parametrize("value", [10 ** 30, 2 ** 63])
def test_an_integer_past_64_bits_is_400_not_500(web, method, path, name, value):
    refused(web.raw_get(path, **{name: str(value)}), 400, "bad_arguments")


@pytest.mark.parametrize("path", ["/api/mind/held/release", "/api/mind/held/drop"])
def test_a_held_id_past_64_bits_is_400_not_500(web, path):
    refused(web.raw_post(path, {"ids": [10 ** 30]}), 400, "bad_arguments")


def test_deeply_nested_json_is_400_not_500(web):
    before = web.get("/api/status")["counts"]
    response = web._client.post("/api/notes", content=b"[" * 200_000, headers={"content-type": "application/json"})
    refused(response, 400, "bad_request")
    assert web.get("/api/status")["counts"] == before


def test_a_cookie_with_a_non_ascii_digit_is_401_not_500(web):
    answer = raw_request(web, b"GET /api HTTP/1.1\r\nHost: HOST\r\nCookie: meshnode_session=\xb2.abc\r\n"
                              b"Connection: close\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 401"), answer[:300]


@pytest.mark.parametrize("path,body", [
    ("/api/friends", '{"did": "\\ud800x"}'),
    ("/api/peers/ping", '{"did": "\\ud800x"}'),
    ("/api/ethics", '{"model_type": "\\ud800x"}'),
    ("/api/goals", '{"title": "t", "participants": ["\\ud800"]}'),
    ("/api/notes", '{"text": "fine", "tags": ["ok"], "\\udc80": 1}'),
])
def test_a_lone_surrogate_in_a_json_body_is_400_not_500(web, path, body):
    before = web.get("/api/status")["counts"]
    response = web._client.post(path, content=body.encode(), headers={"content-type": "application/json"})
    refused(response, 400, "bad_request")
    assert web.get("/api/status")["counts"] == before


@pytest.mark.parametrize("method,path", [("GET", "/api/snapshots/%C2%B2"), ("POST", "/api/snapshots/%C2%B2/rollback"),
                                         ("POST", "/api/confirmations/%C2%B2"), ("GET", "/api/mind/ticks/%C2%B2")])
def test_a_path_number_with_a_superscript_digit_is_400_not_500(web, method, path):
    body = {"approve": True} if "confirmations" in path else {}
    response = web._client.get(path) if method == "GET" else web._client.post(path, json=body)
    refused(response, 400, "bad_arguments")


def test_a_token_created_meanwhile_by_another_process_is_kept_not_overwritten(tmp_path, monkeypatch):
    """`meshnode web url` and a starting node both find no token: the second to create one must
    take the first's (else the link the first printed no longer logs in)."""
    from meshnode.store.home import web_token as auth

    path = tmp_path / "web.token"
    theirs = "T" * 43
    made = auth.new_token

    def racing_new_token():
        path.write_text(theirs + "\n")  # the other process won the race
        path.chmod(0o600)
        return made()

    monkeypatch.setattr(auth, "new_token", racing_new_token)
    assert auth.read_token(path) == theirs
    assert path.read_text().strip() == theirs
    assert not [p.name for p in tmp_path.iterdir() if p.name != "web.token"]  # no temporary file left


def test_rotating_replaces_the_token_and_leaves_no_temporary_file(tmp_path):
    from meshnode.store.home import web_token as auth

    path = tmp_path / "web.token"
    first = auth.read_token(path)
    second = auth.write_token(path)
    assert second != first and auth.read_token(path) == second
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["web.token"]


@pytest.fixture(scope="module")
def proxied(tmp_path_factory):
    node = WebNode(tmp_path_factory.mktemp("webproxy"), "proxied", env={"MESHNODE_WEB_HOSTS": "notebook.example"})
    try:
        yield node
    finally:
        node.stop()


def test_a_tls_proxy_named_in_hosts_may_post_with_a_cookie(proxied):
    """[web] hosts names a reverse proxy; it terminates TLS, so the browser's Origin is
    https://<that name> while the node serves http (and sees the proxy's Host or its own)."""
    with proxied.client(bearer=False) as client:
        own = {"Origin": proxied.url}
        assert client.post("/api/login", json={"token": proxied.token}, headers=own).status_code == 200
        for host in ("notebook.example", urlsplit(proxied.url).netloc):
            ok = client.post("/api/logout", json={}, headers={"Origin": "https://notebook.example", "Host": host})
            assert ok.status_code == 200, (host, ok.text)
        evil = client.post("/api/logout", json={}, headers={"Origin": "https://evil.example", "Host": "notebook.example"})
        refused(evil, 403, "cross_origin")
        plain = client.post("/api/logout", json={}, headers={"Origin": "http://evil.example:1", "Host": "notebook.example"})
        refused(plain, 403, "cross_origin")
