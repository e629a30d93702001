"""``meshnode reactor ...`` as a person runs it (protocols/reactor.md sections 12.2 and 14): the
reading commands without a running node, ``scan --once`` (dry run, then for real: a job for this
node's core waits for the node), rules with the config's changes, bad input refused in one line,
``--json`` everywhere, and output that survives ``| head``."""

from __future__ import annotations

import json
from pathlib import Path

from cli_runner import run_into_closed_pipe
from test_cli import assert_clean_failure, one_error_line


def ok(result) -> str:
    assert result.returncode == 0, (result.stdout, result.stderr)
    return result.stdout


def js(run_cli, home: Path, *args, env=None):
    return json.loads(ok(run_cli("--home", home, "reactor", *args, "--json", env=env)))


def test_rules_show_the_config_changes(home, run_cli):
    text = (home / "config.toml").read_text().replace("rules_off = []", 'rules_off = ["info"]')
    text = text.replace("[reactor.routes]\n", '[reactor.routes]\n"task.due" = "coordinator"\n')
    (home / "config.toml").write_text(text)
    rules = {r["rule"]: r for r in js(run_cli, home, "rules")}
    assert {"direct_note", "offer", "task_due", "heartbeat_dead", "person", "info", "ext"} <= set(rules)
    assert rules["info"]["off"] is True and rules["offer"]["off"] is False
    assert rules["task_due"]["rerouted"] == {"task.due": "coordinator"}
    text = ok(run_cli("--home", home, "reactor", "rules"))
    assert any(line.startswith("info") and " off " in line for line in text.splitlines())
    assert "(task.due -> coordinator)" in text


def test_status_without_a_node_and_when_off(home, run_cli):
    status = js(run_cli, home, "status")
    assert status["enabled"] is True and status["node"] == "not running"
    assert js(run_cli, home, "status", env={"MESHNODE_REACTOR_ENABLED": "false"})["enabled"] is False
    off = run_cli("--home", home, "reactor", "scan", "--once", env={"MESHNODE_REACTOR_ENABLED": "false"})
    assert "the reactor is off" in one_error_line(off)
    # no node here: exit 3, as every command that needs the running node
    assert "reactor scan --once" in one_error_line(run_cli("--home", home, "reactor", "scan"), code=3)


def test_scan_once_dry_run_writes_nothing_then_a_job_waits_for_the_node(home, run_cli):
    ok(run_cli("--home", home, "llm", "add", "main", "--url", "http://127.0.0.1:9/v1", "--model", "m"))  # it thinks
    ok(run_cli("--home", home, "note", "add", "could you check the fuses in the barn before friday?"))
    dry = js(run_cli, home, "scan", "--once", "--dry-run")
    assert dry["dry_run"] is True
    assert [d["action"] for d in dry["decisions"]] == ["woken"], dry
    assert js(run_cli, home, "events", "--all") == [] and js(run_cli, home, "jobs") == []

    scan = js(run_cli, home, "scan", "--once")
    assert len(scan["jobs"]) == 1 and scan["started"] == [], scan  # this node's core: left to `meshnode run`
    job = scan["jobs"][0]["job_id"]
    jobs = js(run_cli, home, "jobs")
    assert [(j["job_id"], j["status"]) for j in jobs] == [(job, "queued")]
    shown = js(run_cli, home, "jobs", "show", job)
    assert shown["job_id"] == job and shown["context"], shown
    assert (home / "reactor" / "wake" / f"{job}.md").read_text().strip()
    assert json.loads((home / "reactor" / "wake" / f"{job}.json").read_text())
    events = js(run_cli, home, "events")
    assert len(events) == 1 and events[0]["event_type"].startswith("note.")
    key = events[0]["dedupe_key"]
    explained = js(run_cli, home, "explain", key)
    assert [(d["action"], d["job_id"]) for d in explained["decisions"]] == [("woken", job)], explained
    text = ok(run_cli("--home", home, "reactor", "explain", key))
    assert "woken [direct_note]" in text and job in text
    assert "not running" in ok(run_cli("--home", home, "reactor", "status"))
    again = js(run_cli, home, "scan", "--once")  # the same note again: nothing new
    assert again["jobs"] == [] and {d["action"] for d in again["decisions"]} <= {"duplicate"}, again


def test_bad_input_is_one_line(home, run_cli):
    assert "--since" in one_error_line(run_cli("--home", home, "reactor", "events", "--since", "soon"))
    assert "no reactor job" in one_error_line(run_cli("--home", home, "reactor", "jobs", "show", "wake-nothing"))
    assert "usage" in one_error_line(run_cli("--home", home, "reactor", "jobs", "sideways"))
    assert "no reactor event or job" in one_error_line(run_cli("--home", home, "reactor", "explain", "note:nope"))
    assert "no lease" in one_error_line(run_cli("--home", home, "reactor", "release", "wake-nothing"))
    assert "--limit" in one_error_line(run_cli("--home", home, "reactor", "events", "--limit", "0"))
    assert_clean_failure(run_cli("--home", home, "reactor", "jobs", "--status", "sideways"), code=2)
    assert_clean_failure(run_cli("--home", home, "reactor"), code=2)


def test_aliases_and_unknown_addressees(home, run_cli):
    (home / "reactor").mkdir(exist_ok=True)
    (home / "reactor" / "aliases.toml").write_text('[agents.self]\naliases = ["ductor", "Nodus"]\n')
    rows = js(run_cli, home, "aliases")
    mine = next(r for r in rows if r["self"])
    assert {"ductor", "nodus"} <= {a.lower() for a in mine["aliases"]}
    assert js(run_cli, home, "aliases", "--unknown") == []
    ok(run_cli("--home", home, "note", "add", "@somebody-else please water the plants today?"))
    ok(run_cli("--home", home, "reactor", "scan", "--once"))
    (row,) = js(run_cli, home, "aliases", "--unknown")
    assert (row["name"], row["events"]) == ("somebody-else", 1)
    assert "somebody-else  named by 1 event(s), last " in ok(run_cli("--home", home, "reactor", "aliases", "--unknown"))
    (home / "reactor" / "aliases.toml").write_text('[agents.self]\naliases = ["x"]\n[agents.scout]\naliases = ["x"]\n')
    assert "aliases.toml" in one_error_line(run_cli("--home", home, "reactor", "aliases"))
    for dry in ((), ("--dry-run",)):  # was a traceback (an exception group out of the scan's nursery)
        assert "names two agents" in one_error_line(run_cli("--home", home, "reactor", "scan", "--once", *dry))


def test_output_survives_a_closed_pipe(home, run_cli, fake_user_home):
    ok(run_cli("--home", home, "llm", "add", "main", "--url", "http://127.0.0.1:9/v1", "--model", "m"))  # jobs to list
    for n in range(3):
        ok(run_cli("--home", home, "note", "add", f"question number {n} for you, would you look at it?"))
    ok(run_cli("--home", home, "reactor", "scan", "--once"))
    for command in (("rules",), ("status", "--json"), ("events", "--json"), ("jobs",)):
        for read_lines in (0, 1):
            result = run_into_closed_pipe(["--home", home, "reactor", *command], fake_user_home, read_lines=read_lines)
            assert result.returncode in (0, 141), (command, result.returncode, result.stderr)
            assert result.stderr == "", (command, result.stderr)


def test_help_names_every_subcommand(run_cli):
    text = ok(run_cli("reactor", "--help"))
    for name in ("status", "scan", "events", "jobs", "explain", "rules", "aliases", "release"):
        assert name in text


def test_a_since_longer_than_the_epoch_means_everything():
    from meshnode.faces.cli.reactor import since_ms

    now = 1_780_000_000_000
    assert since_ms("2h", now) == now - 7_200_000
    assert since_ms("9999999999999999d", now) == 0  # was an int past SQLite's 64 bits
    assert since_ms("1" + "0" * 400 + "w", now) == 0  # was OverflowError (float infinity)
