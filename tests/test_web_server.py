"""The web server's parts without a node: argument checking, error statuses, serve and cancel."""

from __future__ import annotations

import socket
import ssl

import httpx
import pytest
import trio

from meshnode.base.config import load_config
from meshnode.base.errors import MeshnodeError
from meshnode.base.metrics import Metrics
from meshnode.faces.web.auth import Auth, LoginLimiter
from meshnode.faces.web.endpoint import Arg, Endpoint, parse_args
from meshnode.faces.web.errors import error_response, status_for
from meshnode.faces.web.server import serve_web
from meshnode.faces.web.services import Services

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
    ("unreachable", 502), ("bad_sync", 502), ("db_busy", 503), ("timeout", 504), ("something_new", 400),
])
def test_status_for(code, status):
    assert status_for(code) == status


def test_error_response_has_the_control_shape():
    response = error_response(MeshnodeError("not_found", "no such note"))
    assert response.status_code == 404
    assert response.body == b'{"ok":false,"code":"not_found","reason":"no such note"}'


# --- auth's pure parts ------------------------------------------------------------------------


def test_login_limiter_blocks_after_five_failures_for_a_minute():
    limiter = LoginLimiter()
    for t in range(4):
        limiter.failed("a", float(t))
    assert not limiter.blocked("a", 4.0)
    limiter.failed("a", 4.0)
    assert limiter.blocked("a", 5.0) and not limiter.blocked("b", 5.0)
    assert limiter.wait_s("a", 5.0) == 59.0 and limiter.wait_s("b", 5.0) == 0.0  # what Retry-After says
    assert not limiter.blocked("a", 64.1)  # a minute later
    for t in (100.0, 130.0, 170.0, 200.0, 240.0):  # five, but never five within a minute
        limiter.failed("a", t)
    assert not limiter.blocked("a", 241.0)


def test_login_limiter_caps_all_sources_together():
    """Guesses spread over many sources (User-Agents) hit the global cap: then every wrong token waits."""
    limiter = LoginLimiter(global_failures=12)
    for n in range(11):
        limiter.failed(f"127.0.0.1 agent{n}", float(n))
    assert not limiter.blocked("127.0.0.1 browser", 11.0)
    limiter.failed("127.0.0.1 agent11", 11.0)
    assert limiter.wait_s("127.0.0.1 browser", 12.0) == 59.0
    assert not limiter.blocked("127.0.0.1 browser", 71.0)


def test_login_limiter_holds_a_bounded_number_of_sources():
    limiter = LoginLimiter(failures=1, max_clients=8)
    for n in range(100):
        limiter.failed(f"c{n}", float(n) / 100)
    assert len(limiter._recent) <= 8 and len(limiter._blocked) <= 8


def test_sessions_expire_and_need_the_token(tmp_path):
    auth = Auth(tmp_path / "web.token", session_hours=1, secure=False)
    value = auth.session_value(1_000_000)
    assert auth.session_ok(value, 1_000_000 + 3_599_000)
    assert not auth.session_ok(value, 1_000_000 + 3_600_000 + 61_000)  # expired
    assert not auth.session_ok(value.replace(".", ".0", 1)[:-1], 1_000_000)  # forged
    assert not auth.session_ok("2000000." + value.split(".")[1], 2_000_000)  # another time, same MAC
    assert not auth.session_ok(None, 1) and not auth.session_ok("x" * 300, 1)
    other = Auth(tmp_path / "other.token", session_hours=1, secure=False)
    assert not other.session_ok(value, 1_000_000)


# --- serve and cancel in a trio nursery -------------------------------------------------------


class FakeControl:
    async def handle(self, cmd, args):
        return {"cmd": cmd, "args": args}


async def test_serve_answers_on_the_callers_loop_and_stops_on_cancel(tmp_path, monkeypatch):
    from meshnode.faces.web import server

    make = server.hypercorn_config

    def patient(*args):  # an hour's graceful wait: a stop that waited for it would fail fail_after below
        cfg = make(*args)
        cfg.graceful_timeout = 3600
        return cfg

    monkeypatch.setattr(server, "hypercorn_config", patient)
    config = load_config(tmp_path, environ={"MESHNODE_WEB_LISTEN": "127.0.0.1:0"})
    services = Services(config, None, None, None, Metrics(), FakeControl())
    token = None
    with trio.fail_after(60):  # hung
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(serve_web, config, services)
            host, port = bound.rsplit(":", 1)
            assert host == "127.0.0.1" and int(port) > 0
            token = (tmp_path / "web.token").read_text().strip()
            async with httpx.AsyncClient(base_url=f"http://{bound}",
                                         headers={"Authorization": f"Bearer {token}"}) as client:
                response = await client.get("/api/session")
                assert response.json() == {"ok": True, "result": {"session": True, "via": "bearer"}}
                assert (await client.get("/api")).status_code == 200
            assert services.metrics.get("web_requests", route="/api/session", status="200") == 1
            nursery.cancel_scope.cancel()  # hypercorn's graceful wait is cancelled with the rest
    with socket.socket() as probe:  # the port is free again
        probe.bind(("127.0.0.1", int(port)))


def self_signed(folder) -> tuple[str, str]:
    """A throwaway certificate for 127.0.0.1 (cert.pem, key.pem in ``folder``)."""
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .sign(key, hashes.SHA256()))
    (folder / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                       serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))
    return "cert.pem", "key.pem"


async def test_tls_serves_https_and_secure_cookies(tmp_path):
    cert, key = self_signed(tmp_path)
    config = load_config(tmp_path, environ={"MESHNODE_WEB_LISTEN": "127.0.0.1:0", "MESHNODE_WEB_TLS_CERT": cert,
                                            "MESHNODE_WEB_TLS_KEY": key})
    services = Services(config, None, None, None, Metrics(), FakeControl())
    async with trio.open_nursery() as nursery:
        bound = await nursery.start(serve_web, config, services)
        token = (tmp_path / "web.token").read_text().strip()
        origin = f"https://{bound}"
        trusted = ssl.create_default_context(cafile=str(tmp_path / cert))
        async with httpx.AsyncClient(base_url=origin, verify=trusted) as client:
            response = await client.post("/api/login", json={"token": token}, headers={"Origin": origin})
            assert response.status_code == 200, response.text
            assert "Secure" in response.headers["set-cookie"]
            assert (await client.get("/api/session")).json()["result"] == {"session": True, "via": "cookie"}
        async with httpx.AsyncClient(base_url=f"http://{bound}") as plain:  # no clear text on a TLS port
            with pytest.raises(httpx.HTTPError):
                await plain.get("/api/session")
        nursery.cancel_scope.cancel()
