"""Plug-in adapters (design 4.1): line validation, prefixes, caps, and real runs."""

from __future__ import annotations

import json
import sys
import types

import pytest
import trio

from meshnode.base.container import parse_ms
from meshnode.engines.reactor import plugins
from meshnode.engines.reactor.types import Severity, TraceKind

NOW = 1_780_000_000_000


def line(**kw):
    base = {"event_type": "disk_full", "subject": "host-1:/var", "dedupe_key": "host-1:/var:2026-12-01",
            "severity": "P3", "summary": "/var is 97 % full"}
    return json.dumps({**base, **kw})


def test_valid_line_is_prefixed_and_defaulted():
    events, errors = plugins.parse_lines("mon", line(refs={"host": "host-1", "pct": 97}, extra="dropped"), {}, NOW)
    assert errors == []
    (e,) = events
    assert e.event_type == "ext.mon.disk_full" and e.dedupe_key == "ext:mon:host-1:/var:2026-12-01"
    assert e.severity is Severity.P3 and e.agent == "self" and e.suggested_route == "agent"
    assert e.at_ms == NOW and e.source == "mon" and dict(e.refs) == {"host": "host-1", "pct": 97}
    assert e.required_trace == (TraceKind.MESSAGE, TraceKind.TASK_UPDATE, TraceKind.BLOCKER)


def test_optional_fields():
    text = line(owner="murr", suggested_route="operator", required_trace=["decision"], at="2026-12-01T10:00:00Z")
    (e,), _ = plugins.parse_lines("mon", text, {}, NOW)
    assert e.agent == "murr" and e.suggested_route == "operator" and e.required_trace == (TraceKind.DECISION,)
    assert e.at_ms == parse_ms("2026-12-01T10:00:00.000Z")


def test_severity_is_capped():
    (e,), _ = plugins.parse_lines("mon", line(severity="P1"), {}, NOW)
    assert e.severity is Severity.P2  # default cap: a plug-in cannot declare an emergency
    (e,), _ = plugins.parse_lines("mon", line(severity="P1"), {"max_severity": "P1"}, NOW)
    assert e.severity is Severity.P1
    (e,), _ = plugins.parse_lines("mon", line(severity="P2"), {"max_severity": "P3"}, NOW)
    assert e.severity is Severity.P3


@pytest.mark.parametrize("bad, why", [
    ("not json", "not JSON"),
    ("[1, 2]", "JSON object"),
    (line(event_type="Disk Full"), "event_type"),
    (line(event_type="x" * 41), "event_type"),
    (line(subject=""), "subject"),
    (line(subject="s" * 201), "subject"),
    (line(dedupe_key="k" * 161), "dedupe_key"),
    (line(severity="P0"), "severity"),
    (line(summary=None), "summary"),
    (line(suggested_route="everyone"), "suggested_route"),
    (line(required_trace=["telepathy"]), "required_trace"),
    (line(refs={"a": {"nested": 1}}), "refs"),
    (line(refs={str(i): i for i in range(11)}), "refs"),
    (line(at="yesterday"), "RFC 3339"),
    (line(at="2026-12-01T10:00:00"), "time zone"),
    (line(severity=["P1"]), "severity"),
    (line(severity={"P": 1}), "severity"),
    ("[" * 100_000, "nested too deeply"),
    (line(refs={"note_id": 10**30}), "refs"),
    (line(at="9999-12-31T23:59:59-23:59"), "after 9999"),
    (line(at="0001-01-01T00:00:00+01:00"), "before 1970"),
])
def test_invalid_lines(bad, why):
    events, errors = plugins.parse_lines("mon", bad, {}, NOW)
    assert events == [] and len(errors) == 1 and why in errors[0] and errors[0].startswith("line 1:")


def test_invalid_lines_do_not_stop_the_others_and_the_first_error_is_kept():
    text = "\n".join([line(dedupe_key="a"), "garbage", line(severity="P9"), "", line(dedupe_key="b")])
    p = plugins.parse_output("mon", text, {}, NOW)
    assert [e.dedupe_key for e in p.events] == ["ext:mon:a", "ext:mon:b"]
    assert p.invalid == 2 and p.first_error.startswith("line 2: not JSON")


def test_at_most_1000_lines():
    text = "\n".join(line(dedupe_key=f"k{i}") for i in range(1003))
    events, errors = plugins.parse_lines("mon", text, {}, NOW)
    assert len(events) == 1000 and errors == ["dropped 3 lines beyond 1000"]


def test_a_bad_adapter_name_is_refused():
    with pytest.raises(ValueError):
        plugins.parse_lines("Bad Name", line(), {}, NOW)


def _script(tmp_path, body: str):
    return ["python3", "-c", body]


def test_a_real_command_printing_lines(tmp_path):
    body = ("import json\n"
            "print(json.dumps({'event_type': 'up', 'subject': 's', 'dedupe_key': 'k1', 'severity': 'P4',"
            " 'summary': 'fine'}))\n"
            "print('oops')\n")
    run = trio.run(plugins.run_plugin, "mon", {"command": _script(tmp_path, body)}, tmp_path, NOW)
    assert not run.failed and run.exit == "ok"
    assert [e.dedupe_key for e in run.events] == ["ext:mon:k1"] and run.invalid == 1
    assert run.first_error.startswith("line 2")


def test_timeout_keeps_the_lines_printed_before(tmp_path):
    body = ("import json, sys, time\n"
            "print(json.dumps({'event_type': 'up', 'subject': 's', 'dedupe_key': 'early', 'severity': 'P4',"
            " 'summary': 'printed before the hang'}), flush=True)\n"
            "sys.stdout.write('{\"half'); sys.stdout.flush()\n"
            "time.sleep(30)\n")
    run = trio.run(plugins.run_plugin, "mon", {"command": _script(tmp_path, body), "timeout_seconds": 1},
                   tmp_path, NOW)
    assert run.failed and run.exit == "timeout"
    assert [e.dedupe_key for e in run.events] == ["ext:mon:early"] and run.invalid == 0


def test_non_zero_exit_keeps_lines_and_stderr(tmp_path):
    body = ("import json, sys\n"
            "print(json.dumps({'event_type': 'up', 'subject': 's', 'dedupe_key': 'k', 'severity': 'P4',"
            " 'summary': 'x'}))\n"
            "sys.stderr.write('the monitor lost its connection\\n'); sys.exit(3)\n")
    run = trio.run(plugins.run_plugin, "mon", {"command": _script(tmp_path, body)}, tmp_path, NOW)
    assert run.failed and run.exit == "error" and run.first_error == "exit 3"
    assert len(run.events) == 1 and "lost its connection" in run.stderr


def test_a_program_not_installed_is_a_failed_run(tmp_path):
    run = trio.run(plugins.run_plugin, "mon", {"command": ["/nonexistent/monitor"]}, tmp_path, NOW)
    assert run.failed and run.exit == "error" and "not installed" in run.first_error


def test_entry_point(tmp_path, monkeypatch):
    mod = types.ModuleType("fake_reactor_plugin")
    mod.events = lambda now_ms: [{"event_type": "t", "subject": "s", "dedupe_key": f"at{now_ms}",
                                  "severity": "P1", "summary": "x"}, {"bad": 1}]

    def boom(now_ms):
        raise RuntimeError("the plug-in broke")

    mod.boom = boom
    monkeypatch.setitem(sys.modules, "fake_reactor_plugin", mod)
    run = trio.run(plugins.run_plugin, "ep", {"entry_point": "fake_reactor_plugin:events"}, tmp_path, NOW)
    assert not run.failed and [e.dedupe_key for e in run.events] == [f"ext:ep:at{NOW}"]
    assert run.events[0].severity is Severity.P2 and run.invalid == 1
    run = trio.run(plugins.run_plugin, "ep", {"entry_point": "fake_reactor_plugin:boom"}, tmp_path, NOW)
    assert run.failed and "the plug-in broke" in run.first_error
