"""``[web]`` settings (protocols/web.md 12) and what the node does with them at start."""

from __future__ import annotations

import socket

import psutil
import pytest

from meshnode.base.config import default_config_text, load_config
from meshnode.base.errors import ConfigError, MeshnodeError
from meshnode.records.gate.drafts import MAX_DRAFT_BYTES
from meshnode.store.home.web_token import read_token
from meshharness import Node
from test_cli import one_error_line


def config_error(tmp_path, **env) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={f"MESHNODE_WEB_{k.upper()}": v for k, v in env.items()})
    assert "\n" not in info.value.reason
    return info.value


def test_defaults_and_environment_overrides(tmp_path):
    web = load_config(tmp_path, environ={}).values["web"]
    assert (web["enabled"], web["listen"], web["allow_remote"], web["metrics_auth"]) == (True, "127.0.0.1:8470",
                                                                                        False, True)
    assert web["max_body_bytes"] >= 2 * MAX_DRAFT_BYTES  # the largest body: a draft edit, JSON-escaped
    env = {"MESHNODE_WEB_LISTEN": "[::1]:0", "MESHNODE_WEB_HOSTS": "notes.example,proxy",
           "MESHNODE_WEB_SESSION_HOURS": "2", "MESHNODE_WEB_ENABLED": "false"}
    web = load_config(tmp_path, environ=env).values["web"]
    assert (web["listen"], web["hosts"], web["session_hours"], web["enabled"]) == (
        "[::1]:0", ["notes.example", "proxy"], 2.0, False)
    assert "[web]" in default_config_text("x")
    (tmp_path / "config.toml").write_text(default_config_text("x"))
    assert load_config(tmp_path, environ={}).values["web"]["listen"] == "127.0.0.1:8470"


@pytest.mark.parametrize("listen", ["8470", "127.0.0.1", "127.0.0.1:70000", "::1:8470", "[nope]:1", ":8470",
                                    "127.0.0.1:x"])
def test_a_bad_listen_names_the_setting(tmp_path, listen):
    exc = config_error(tmp_path, listen=listen)
    assert exc.code == "bad_config" and exc.reason.startswith("web.listen")


def test_ranges_and_tls_pairs_name_the_setting(tmp_path):
    assert "web.session_hours" in config_error(tmp_path, session_hours="0").reason
    assert "web.max_body_bytes" in config_error(tmp_path, max_body_bytes="10").reason
    assert "web.feed_ms" in config_error(tmp_path, feed_ms="1").reason
    assert "web.tls_cert" in config_error(tmp_path, tls_cert="cert.pem").reason  # without tls_key
    assert "web.tls_cert" in config_error(tmp_path, tls_cert="cert.pem", tls_key="key.pem").reason  # missing


def test_a_remote_listen_needs_tls_or_allow_remote(tmp_path):
    exc = config_error(tmp_path, listen="0.0.0.0:8470")
    assert exc.code == "web_remote_refused"
    assert "0.0.0.0:8470 is not loopback" in exc.reason and "tls_cert" in exc.reason and "allow_remote" in exc.reason
    assert load_config(tmp_path, environ={"MESHNODE_WEB_LISTEN": "0.0.0.0:8470",
                                          "MESHNODE_WEB_ALLOW_REMOTE": "true"}).values["web"]["allow_remote"]
    (tmp_path / "cert.pem").write_text("x")
    (tmp_path / "key.pem").write_text("x")
    load_config(tmp_path, environ={"MESHNODE_WEB_LISTEN": "[::]:8470", "MESHNODE_WEB_TLS_CERT": "cert.pem",
                                   "MESHNODE_WEB_TLS_KEY": "key.pem"})
    for loopback in ("localhost:1", "127.0.0.2:1", "[::1]:1"):
        load_config(tmp_path, environ={"MESHNODE_WEB_LISTEN": loopback})


def test_run_refuses_a_remote_listen_in_one_line(home, run_cli):
    line = one_error_line(run_cli("--home", home, "run", env={"MESHNODE_WEB_LISTEN": "0.0.0.0:8470"}))
    assert "is not loopback" in line and "allow_remote" in line


def test_run_refuses_a_taken_port_readably(home, run_cli):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = run_cli("--home", home, "run", env={"MESHNODE_WEB_LISTEN": f"127.0.0.1:{port}"})
    line = one_error_line(result)
    assert line == (f"meshnode: 127.0.0.1:{port} is in use; set [web] listen to another port"
                    " or [web] enabled = false")
    assert not (home / "data" / "control.sock").exists()  # the node stopped cleanly


def listening_ports(pid: int) -> set[int]:
    return {c.laddr.port for c in psutil.Process(pid).net_connections(kind="tcp") if c.status == psutil.CONN_LISTEN}


def test_enabled_false_binds_nothing_and_prints_no_url(tmp_path):
    off = Node(tmp_path, "off", env={"MESHNODE_WEB_ENABLED": "false", "MESHNODE_COGNITION_ENABLED": "false"})
    on = Node(tmp_path, "on", env={"MESHNODE_COGNITION_ENABLED": "false"})
    try:
        off.start()
        on.start()
        assert off.web_url is None and not any(line.startswith(("web:", "login:")) for line in off.output)
        p2p = {int(a.split("/tcp/")[1].split("/")[0]) for a in off.addresses}
        assert listening_ports(off.proc.pid) == p2p
        assert not (off.home / "web.token").exists()
        web_port = int(on.web_url.rstrip("/").rsplit(":", 1)[1])
        assert on.web_url.startswith("http://127.0.0.1:") and web_port in listening_ports(on.proc.pid)
        assert "login:    meshnode web url" in on.output
    finally:
        off.stop()
        on.stop()


def test_token_file_is_0600_and_a_wider_one_is_refused(home, run_cli):
    out = run_cli("--home", home, "web", "url")
    assert out.returncode == 0, out.stderr
    token_file = home / "web.token"
    token = token_file.read_text().strip()
    assert out.stdout.splitlines()[0] == f"http://127.0.0.1:0/login#t={token}"
    assert token_file.stat().st_mode & 0o777 == 0o600 and len(token) == 43
    assert run_cli("--home", home, "web", "url").stdout.splitlines()[0].endswith(token)  # stable
    token_file.chmod(0o640)
    with pytest.raises(MeshnodeError) as info:
        read_token(token_file)
    assert info.value.code == "web_token_mode"
    line = one_error_line(run_cli("--home", home, "run"))
    assert "mode 0640" in line and "chmod 600" in line
    assert "mode 0640" in one_error_line(run_cli("--home", home, "web", "url"))
    rotated = run_cli("--home", home, "web", "url", "--rotate")  # a new file, owner-only again
    assert rotated.returncode == 0 and token_file.stat().st_mode & 0o777 == 0o600
    assert token_file.read_text().strip() != token
