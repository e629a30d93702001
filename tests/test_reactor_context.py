"""The wake context (design 8), the final report (10.2), status-only replies (10.1) and settings (13)."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from hypothesis import given, settings, strategies as st

from meshnode.engines.reactor import wake_context
from meshnode.engines.reactor.report import parse_report, status_only
from meshnode.base.config.reactor import DEFAULTS, ReactorConfig
from meshnode.engines.reactor.types import Event, Severity, TraceKind, WakeJob

SELF = "did:key:z6MkSELFxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
NOW = 1_800_000_000_000
CFG = ReactorConfig.from_mapping({}, self_id=SELF)


def job(n_events=1):
    return WakeJob(job_id="wake-x-1", agent=SELF, reason=("direct_note",), priority=Severity.P2,
                   events=tuple(f"note:{i}" for i in range(n_events)), created_ms=NOW, max_runtime_s=600,
                   required_trace=(TraceKind.MESSAGE,), status="queued", context={}, dedupe_key="wake:x:note:0")


def event(i, summary="please review the plan", sev=Severity.P2):
    return Event("note.question", f"note {i}", SELF, sev, f"note:{i}", "agent", (TraceKind.MESSAGE, TraceKind.BLOCKER),
                 NOW - i, "notes", summary, {"note_id": i, "author": "did:key:z6MkPEERx"})


def test_build_has_every_section_and_orders_by_urgency():
    evs = [event(i, sev=Severity.P3) for i in range(3)] + [event(9, sev=Severity.P1)]
    ctx = wake_context.build(job(4), evs, {"names": {"did:key:z6MkPEERx": "isaac"}, "due_tasks": [{"lineage": "L1"}]}, CFG)
    assert set(ctx) >= {"header", "due_tasks", "inbox", "liveness", "waiting_on_person", "shared_attention",
                        "required_outcome", "routing", "limits"}
    assert ctx["inbox"][0]["key"] == "note:9" and ctx["inbox"][0]["from_name"] == "isaac"
    assert ctx["required_outcome"]["traces"] == ["blocker", "message"]
    assert ctx["limits"]["max_outgoing"] == 3
    json.dumps(ctx)  # stored as JSON
    md = wake_context.render_md(ctx, CFG.context_bytes)
    assert "## Actionable inbox" in md and "## Hard limits" in md and "status-only replies do not count" in md
    assert "no broadcast" in md


def test_routed_items_name_their_agent():
    other = Event("note.direct", "n", "scout", Severity.P2, "note:s", "agent", (TraceKind.MESSAGE,), NOW, "notes", "hi")
    md = wake_context.render_md(wake_context.build(job(2), [event(1), other], None, CFG), 8192)
    assert "`note:s` (for scout)" in md and "(for did:key" not in md


def test_digest_items_cap_counts_the_rest():
    ctx = wake_context.build(job(30), [event(i) for i in range(30)], None, CFG)
    assert len(ctx["inbox"]) == 20 and ctx["inbox_more"] == 10
    assert "and 10 more" in wake_context.render_md(ctx, 100_000)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 60), st.text(min_size=0, max_size=900), st.integers(1024, 9000))
def test_render_never_exceeds_the_budget_and_keeps_the_limits(n, summary, budget):
    ctx = wake_context.build(job(n), [event(i, summary) for i in range(n)], {"liveness": [{"id": "x" * 300}] * 12}, CFG)
    md = wake_context.render_md(ctx, budget)
    assert len(md.encode()) <= budget
    assert "## Hard limits" in md and "## Required outcome" in md
    for trace in ctx["required_outcome"]["traces"]:  # each required trace says what to do, in command words
        assert any(line.startswith(f"- {trace}: ") for line in md.splitlines()), (trace, md)


def test_parse_report_from_text_and_dict():
    text = 'thinking...\n{"processed_messages": [412, 415], "task_updates": ["L1"], "outgoing_messages": [418],' \
           ' "blocked": false, "needs_human": false, "next_check_at": "2027-01-15T12:00:00Z"}\n'
    r = parse_report(text)
    assert r.processed_messages == ("412", "415") and r.task_updates == ("L1",) and r.outgoing_messages == ("418",)
    assert r.next_check_at_ms == int(datetime(2027, 1, 15, 12, tzinfo=timezone.utc).timestamp() * 1000)
    assert parse_report({"blocked": True, "blocked_reason": "waiting on key", "needs_human": True}).needs_human


def test_parse_report_clamps_next_check():
    early = parse_report({"next_check_at": NOW + 1000}, now_ms=NOW)
    late = parse_report({"next_check_at": NOW + 30 * 86_400_000}, now_ms=NOW)
    assert early.next_check_at_ms == NOW + 600_000 and late.next_check_at_ms == NOW + 7 * 86_400_000


@pytest.mark.parametrize("bad", [None, 3, "no json here", '{"unrelated": 1}', {"processed_messages": "412"},
                                 {"blocked": "yes"}, {"next_check_at": "tomorrow"}, {"processed_messages": [True]}])
def test_parse_report_rejects_non_reports(bad):
    assert parse_report(bad) is None


@pytest.mark.parametrize("text, only", [("ok", True), ("Will do!", True), ("working on it...", True),
                                        ("Received, thanks.", True), ("x" * 19, True),
                                        ("I reviewed the plan and moved the deploy to Friday", False)])
def test_status_only(text, only):
    assert status_only(text, CFG.status_only_phrases) is only


def test_settings_defaults_and_rewrites():
    assert CFG.max_jobs_per_scan == DEFAULTS["max_jobs_per_scan"] == 3
    assert CFG.coordinator == SELF and CFG.local_agents == {SELF}
    cfg = ReactorConfig.from_mapping({"mentor": "did:key:z6MkMENTORx", "external": {"scout": {"command": ["a"]}},
                                      "mentors": {"scout": "self"}, "coordinator": "scout"}, self_id=SELF)
    assert cfg.mentor_of(SELF) == "did:key:z6MkMENTORx" and cfg.mentor_of("scout") == SELF
    assert cfg.local_agents == {SELF, "scout"} and cfg.coordinator == "scout"
    assert cfg.runtime_s("scout") == 1800 and cfg.runtime_s(SELF) == 600


@pytest.mark.parametrize("d, word", [
    ({"scan_seconds": 0}, "reactor.scan_seconds"), ({"max_jobs_per_scan": 2.5}, "reactor.max_jobs_per_scan"),
    ({"enabled": "yes"}, "reactor.enabled"), ({"quiet_hours": 30}, "reactor.quiet_hours"),
    ({"dedupe_days": 40}, "reactor.dedupe_days"), ({"rules_off": ["nope"]}, "reactor.rules_off"),
    ({"ignore_subjects": ["("]}, "reactor.ignore_subjects"), ({"coordinator": "ghost"}, "reactor.coordinator"),
    ({"external": {"Bad Name": {"command": ["x"]}}}, "reactor.external"), ({"bogus": 1}, "reactor.bogus"),
    ({"external": {"scout": {"command": []}}}, "reactor.external.scout.command"),
    ({"adapters": {"mon": {}}}, "reactor.adapters.mon"), ({"routes": {"task.due": "ghost"}}, "reactor.routes.task.due"), ({"mentors": {"a": 3}}, "reactor.mentors.a"),
])
def test_settings_errors_name_the_setting(d, word):
    with pytest.raises(ValueError) as exc:
        ReactorConfig.from_mapping(d, self_id=SELF)
    assert word in str(exc.value)


def test_last_json_object_reads_the_last_object_line():
    from meshnode.engines.reactor import report

    text = 'log line\n{"not": "a report"}\n{"blocked": false, "task_updates": ["L1"]}\ntrailing words'
    assert report.last_json_object(text) == {"blocked": False, "task_updates": ["L1"]}
    assert report.last_json_object('{"x": 1}\nno json here') is None


_X = {"command": ["/usr/local/bin/agent"]}
_P = {"command": ["/usr/local/bin/mon"]}


@pytest.mark.parametrize("spec, word", [
    ({**_X, "network": "yes"}, "reactor.external.scout.network"),
    ({**_X, "memory_mb": 32}, "reactor.external.scout.memory_mb"),
    ({**_X, "memory_mb": 70000}, "reactor.external.scout.memory_mb"),
    ({**_X, "memory_mb": 512.5}, "reactor.external.scout.memory_mb"),
    ({**_X, "workspace": "tmp"}, "reactor.external.scout.workspace"),
    ({**_X, "timeout_seconds": True}, "reactor.external.scout.timeout_seconds"),
    ({**_X, "timeout": 60}, "reactor.external.scout.timeout"),
])
def test_external_agent_keys_are_checked_at_load(spec, word):
    with pytest.raises(ValueError) as exc:
        ReactorConfig.from_mapping({"external": {"scout": spec}}, self_id=SELF)
    assert word in str(exc.value)


@pytest.mark.parametrize("spec, word", [
    ({**_P, "timeout_seconds": 0}, "reactor.adapters.mon.timeout_seconds"),
    ({**_P, "timeout_seconds": "20"}, "reactor.adapters.mon.timeout_seconds"),
    ({**_P, "network": 1}, "reactor.adapters.mon.network"),
    ({**_P, "workspace": "relative/dir"}, "reactor.adapters.mon.workspace"),
    ({**_P, "agent": ""}, "reactor.adapters.mon.agent"),
    ({**_P, "agent": ["scout"]}, "reactor.adapters.mon.agent"),
    ({"entry_point": "no colon here"}, "reactor.adapters.mon.entry_point"),
    ({"command": "mon --json"}, "reactor.adapters.mon.command"),
    ({**_P, "every": 60}, "reactor.adapters.mon.every"),
])
def test_plugin_adapter_keys_are_checked_at_load(spec, word):
    with pytest.raises(ValueError) as exc:
        ReactorConfig.from_mapping({"adapters": {"mon": spec}}, self_id=SELF)
    assert word in str(exc.value)


def test_valid_external_and_plugin_keys_load():
    cfg = ReactorConfig.from_mapping({
        "external": {"scout": {**_X, "timeout_seconds": 60, "network": False, "memory_mb": 1024, "workspace": "home"}},
        "adapters": {"mon": {**_P, "every_seconds": 60, "max_severity": "P3", "timeout_seconds": 5, "network": True,
                             "workspace": "/var/lib/mon", "agent": "scout"},
                     "ep": {"entry_point": "mtl_tools.reactor:events"}}}, self_id=SELF)
    assert cfg.external["scout"]["memory_mb"] == 1024 and cfg.adapters["mon"]["agent"] == "scout"


def test_an_agent_s_line_of_nested_brackets_is_not_its_report_and_does_not_raise():
    from meshnode.engines.reactor import report

    text = '{"processed_messages": [1]}\n' + '{"a": ' + "[" * 100_000 + "\n"
    assert report.last_json_object(text) == {"processed_messages": [1]}
